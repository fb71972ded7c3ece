import { deriveSeed, InvalidArgumentError, type Sample, type Trajectory } from '@ludic/core'
import { createGenerationEngine, createLocalPolicy, type CausalLanguageModel, type GenerationEngine } from '@ludic/model'
import { collect, type CollectResult } from '@ludic/rollout'
import { episodeSeeds } from './episode-seeds.js'
import type { League, LeagueStep } from './league/league.js'
import { seatPolicies, type Opponent } from './opponents.js'
import { nodePlatform } from './platform.js'
import { learnerPolicyId, type ParsedRlTrainerConfig } from './rl-config.js'

/** One step's experience, whichever way it was collected. */
export interface RolloutBatch {
  trajectories: Trajectory[]
  /** The samples to train on: the learner's turns with a non-empty response, in trajectory then turn order. */
  samples: Sample[]
  /** Seconds the rollout took to generate (the worker's time in asynchronous mode); undefined: the step's collection time. */
  generationSeconds?: number
  /** Played by older weights (asynchronous collection): what the update needs to correct for it. */
  offPolicy?: {
    /** The weights version (trainer step) that played the batch. */
    policyVersion: number
    /** Batches dropped so far for being too stale. */
    dropped: number
    /** Truncation of the per-token importance ratio π_current / π_rollout. */
    importanceCap: number
    /** The reference model's log-probs of `samples`, computed by the worker (when the run has a KL term). */
    referenceLogprobs?: Float32Array[]
  }
}

/** Where a trainer's steps get their experience: `collect` on the trainer's thread, or rollout workers. */
export interface RolloutSource {
  /**
   * Its batches may be played by weights older than the current ones (rollout workers, generation servers): the
   * update then needs the current weights' log-probs for its importance ratio, so a trainer with
   * `recomputeOldLogprobs: false` refuses such a source when it is built, and a batch that says it is off-policy
   * (`RolloutBatch.offPolicy`) from a source that says it is not fails its step.
   */
  readonly offPolicy: boolean
  /**
   * Plays each group's episodes once more, greedily (temperature 0, one episode per group, the same reset seeds):
   * the return of each role by group id, ReMax's baseline. Absent: this source cannot (an estimator that needs
   * `baselineRewards` is refused when the trainer is built).
   */
  greedyReturns?(stepIndex: number): Promise<Map<string, Readonly<Record<string, number>>>>
  /** The experience of step `stepIndex` (seeds depend only on the run's seed and the step). */
  next(stepIndex: number): Promise<RolloutBatch>
  /** The model has been updated to step `stepCount` (rollout workers get the new weights; a promise is awaited before the next step). */
  updated(stepCount: number): void | Promise<void>
  /** Stops rollout workers, if any; `next` starts them again. */
  close(): Promise<void>
}

export interface RolloutSourceContext {
  config: ParsedRlTrainerConfig
  model: CausalLanguageModel
  /** The KL term's frozen reference model, if any (rollout workers compute its log-probs). */
  reference: CausalLanguageModel | undefined
  /** The league, when `config.opponents` has a snapshot pool (only the synchronous source plays it). */
  league?: League | undefined
}

/**
 * The rollout source a config asks for: asynchronous with `config.asyncRollout` (worker threads: the Node entry's,
 * refused in the browser entry), else synchronous.
 */
export function createRolloutSource(context: RolloutSourceContext): RolloutSource {
  const { asyncRollout } = context.config
  return asyncRollout === undefined ? synchronousSource(context) : nodePlatform('config.asyncRollout', asyncRollout).createAsyncRolloutSource(context)
}

/** Self-play (and opponents, the league) through `collect` with a local policy of the current weights. */
function synchronousSource({ config, model, league }: RolloutSourceContext): RolloutSource {
  const { batch, seed, opponents, rolePolicies } = config
  const mixed = opponents !== undefined || rolePolicies !== undefined
  // One engine for the run (it follows the weights step to step); made now, so settings it cannot run are refused here.
  let engine = batch.engine === false ? undefined : createRunEngine(model, config)
  /** The step's episodes with the current weights: `groupSize` each at the batch's temperature, or one greedy. */
  const play = async (stepIndex: number, greedy: boolean) => {
    const chatTemplate = config.chatTemplate === undefined ? {} : { chatTemplate: config.chatTemplate }
    const policy = createLocalPolicy({
      model,
      tokenizer: config.tokenizer,
      maxBatch: batch.maxGenerationBatch,
      seed: deriveSeed('ludic.policy', seed, stepIndex),
      id: learnerPolicyId,
      ...chatTemplate,
      ...(batch.engine === false ? {} : { engine: (engine ??= createRunEngine(model, config)) }),
    })
    const runId = `step-${stepIndex}`
    let leagueStep: LeagueStep | undefined
    if (league !== undefined) {
      await league.prepare(stepIndex)
      leagueStep = league.step(policy, stepIndex, runId)
    }
    try {
      const result = await collect({
        environments: config.environments!,
        policies: leagueStep?.policies ?? seatPolicies(policy, { opponents: opponents as Opponent[] | undefined, rolePolicies, seed, stepIndex }),
        ...(mixed ? { learnerPolicyIds: [learnerPolicyId] } : {}),
        seeds: episodeSeeds(seed, stepIndex, batch.episodesPerStep),
        groupSize: greedy ? 1 : batch.groupSize,
        concurrency: batch.concurrency,
        maxTurns: batch.maxTurns,
        maxBatchSize: batch.maxGenerationBatch,
        // On the engine each episode steps as soon as its own completion is back.
        ...(batch.engine === false ? {} : { stepping: 'per-trajectory' as const }),
        ...(config.prompt === undefined ? {} : { prompt: config.prompt }),
        generation: { maxTokens: batch.maxTokens, temperature: greedy ? 0 : batch.temperature },
        samplingSeed: deriveSeed('ludic.sampling', seed, stepIndex),
        // The same run id and seeds: the greedy episodes' group ids are the sampled ones'.
        runId,
        ...(config.trainRoles === undefined ? {} : { trainRoles: config.trainRoles }),
      })
      // The sampled games against opponents feed the league's win rates and ratings (greedy baselines do not).
      if (leagueStep !== undefined && !greedy) league!.record(leagueStep.seating, result.trajectories)
      return result
    } finally {
      leagueStep?.release()
    }
  }
  return {
    offPolicy: false,
    async next(stepIndex) {
      const result = await play(stepIndex, false)
      return { trajectories: result.trajectories, samples: trainableSamples(result) }
    },
    async greedyReturns(stepIndex) {
      const result = await play(stepIndex, true)
      if (result.failures.length > 0) throw result.failures[0]!.error
      return new Map(result.trajectories.map((trajectory) => [trajectory.groupId, trajectory.returns]))
    },
    updated() {},
    async close() {
      engine?.dispose() // its host copy of the weights; the next step makes a new one
      engine = undefined
    },
  }
}

/**
 * The run's generation engine (`config.batch.engine`; its rows `maxGenerationBatch` unless set; every architecture the
 * model defines): settings it cannot run are refused naming the option under `config.batch.engine`.
 */
export function createRunEngine(model: CausalLanguageModel, config: ParsedRlTrainerConfig): GenerationEngine {
  const settings = config.batch.engine === true ? {} : (config.batch.engine as Exclude<typeof config.batch.engine, boolean>)
  return createGenerationEngine(model, { maxRows: config.batch.maxGenerationBatch, ...settings, tokenizer: config.tokenizer }, 'config.batch.engine')
}

/** The samples with a response; a failed episode fails the step, and a step with nothing to train on is an error. */
export function trainableSamples(result: Pick<CollectResult, 'samples' | 'failures' | 'trajectories'>): Sample[] {
  if (result.failures.length > 0) throw result.failures[0]!.error
  const samples = result.samples.filter((sample) => sample.responseTokenIds.length > 0)
  if (samples.length === 0)
    throw new InvalidArgumentError({ argument: 'config.environments', value: result.trajectories.length, message: 'gave no samples to train on' })
  return samples
}
