import * as tf from '@tensorflow/tfjs-core'
import { deriveSeed, InvalidArgumentError, LudicError, type Sample, type Trajectory } from '@ludic/core'
import { createLocalPolicy, type CausalLanguageModel } from '@ludic/model'
import { collect, createAsyncCollector, type AsyncCollector, type CollectResult } from '@ludic/rollout'
import { builtModulePath } from '@ludic/rollout/worker'
import { episodeSeeds } from './disaggregated-play.js'
import { seatPolicies } from './opponents.js'
import { learnerPolicyId, type ParsedRlTrainerConfig } from './rl-config.js'
import { weightsPayload, type ModelRolloutWorkerData, type RolloutAnnotation } from './rollout-worker.js'

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
}

/** The rollout source a config asks for: asynchronous with `config.asyncRollout`, else synchronous. */
export function createRolloutSource(context: RolloutSourceContext): RolloutSource {
  return context.config.asyncRollout === undefined ? synchronousSource(context) : asynchronousSource(context)
}

/** Self-play (and opponents) through `collect` with a local policy of the current weights. */
function synchronousSource({ config, model }: RolloutSourceContext): RolloutSource {
  const { batch, seed, opponents, rolePolicies } = config
  const mixed = opponents !== undefined || rolePolicies !== undefined
  /** The step's episodes with the current weights: `groupSize` each at the batch's temperature, or one greedy. */
  const play = (stepIndex: number, greedy: boolean) => {
    const chatTemplate = config.chatTemplate === undefined ? {} : { chatTemplate: config.chatTemplate }
    const policy = createLocalPolicy({
      model,
      tokenizer: config.tokenizer,
      maxBatch: batch.maxGenerationBatch,
      seed: deriveSeed('ludic.policy', seed, stepIndex),
      id: learnerPolicyId,
      ...chatTemplate,
    })
    return collect({
      environments: config.environments!,
      policies: seatPolicies(policy, { opponents, rolePolicies, seed, stepIndex }),
      ...(mixed ? { learnerPolicyIds: [learnerPolicyId] } : {}),
      seeds: episodeSeeds(seed, stepIndex, batch.episodesPerStep),
      groupSize: greedy ? 1 : batch.groupSize,
      concurrency: batch.concurrency,
      maxTurns: batch.maxTurns,
      maxBatchSize: batch.maxGenerationBatch,
      ...(config.prompt === undefined ? {} : { prompt: config.prompt }),
      generation: { maxTokens: batch.maxTokens, temperature: greedy ? 0 : batch.temperature },
      samplingSeed: deriveSeed('ludic.sampling', seed, stepIndex),
      // The same run id and seeds: the greedy episodes' group ids are the sampled ones'.
      runId: `step-${stepIndex}`,
      ...(config.trainRoles === undefined ? {} : { trainRoles: config.trainRoles }),
    })
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
    async close() {},
  }
}

/** Rollout workers (`createAsyncCollector`) playing with weights at most `maxStaleness` steps old. */
function asynchronousSource({ config, model, reference }: RolloutSourceContext): RolloutSource {
  const settings = config.asyncRollout!
  const { batch, seed } = config
  let collector: AsyncCollector | undefined
  const start = async (stepIndex: number): Promise<AsyncCollector> => {
    const data: ModelRolloutWorkerData = {
      setupModule: settings.setupModule instanceof URL ? settings.setupModule.href : settings.setupModule,
      setupData: settings.setupData,
      modelConfig: model.config,
      weights: weightsPayload(model.parameters()),
      backend: settings.backend ?? tf.getBackend(),
      maxBatch: batch.maxGenerationBatch,
      seed: deriveSeed('ludic.policy', seed),
      vocabSize: config.tokenizer.vocabSize,
      ...(reference === undefined ? {} : { reference: weightsPayload(reference.parameters()) }),
      chunkSize: batch.miniBatchSize,
      temperature: batch.temperature,
    }
    const started = createAsyncCollector({
      worker: builtModulePath(import.meta.url, 'rollout-worker', '@ludic/trainer'),
      workerData: data,
      workers: settings.workers,
      episodesPerBatch: batch.episodesPerStep,
      groupSize: batch.groupSize,
      concurrency: batch.concurrency,
      maxTurns: batch.maxTurns,
      maxBatchSize: batch.maxGenerationBatch,
      generation: { maxTokens: batch.maxTokens, temperature: batch.temperature },
      ...(config.trainRoles === undefined ? {} : { trainRoles: config.trainRoles }),
      // Batches continue from the step reached, so a resumed run plays new seeds.
      seed: deriveSeed('ludic.async', seed, stepIndex),
      initialVersion: stepIndex,
      maxStaleness: settings.maxStaleness,
      prefetch: settings.prefetch,
      ...(settings.execArgv === undefined ? {} : { execArgv: settings.execArgv }),
    })
    try {
      await started.start()
    } catch (error) {
      await started.close()
      throw error
    }
    return started
  }
  return {
    offPolicy: true,
    async next(stepIndex) {
      collector ??= await start(stepIndex)
      const received = await collector.next(stepIndex)
      const samples = trainableSamples(received)
      const referenceLogprobs = workerReferenceLogprobs(received.annotation as RolloutAnnotation | undefined, samples)
      return {
        trajectories: received.trajectories,
        samples,
        generationSeconds: received.seconds,
        offPolicy: {
          policyVersion: received.policyVersion,
          dropped: collector.stats.batchesDropped,
          importanceCap: settings.importanceCap,
          ...(referenceLogprobs === undefined ? {} : { referenceLogprobs }),
        },
      }
    },
    updated(stepCount) {
      if (collector !== undefined && stepCount % settings.pushEvery === 0) collector.pushWeights(stepCount, weightsPayload(model.parameters()))
    },
    async close() {
      const running = collector
      collector = undefined
      await running?.close()
    },
  }
}

/** The samples with a response; a failed episode fails the step, and a step with nothing to train on is an error. */
export function trainableSamples(result: Pick<CollectResult, 'samples' | 'failures' | 'trajectories'>): Sample[] {
  if (result.failures.length > 0) throw result.failures[0]!.error
  const samples = result.samples.filter((sample) => sample.responseTokenIds.length > 0)
  if (samples.length === 0)
    throw new InvalidArgumentError({ argument: 'config.environments', value: result.trajectories.length, message: 'gave no samples to train on' })
  return samples
}

/** The worker's reference log-probs of these samples, when it sent them (checked against the response lengths). */
function workerReferenceLogprobs(annotation: RolloutAnnotation | undefined, samples: readonly Sample[]): Float32Array[] | undefined {
  const logprobs = annotation?.referenceLogprobs
  if (logprobs === undefined) return undefined
  if (logprobs.length !== samples.length || logprobs.some((row, index) => row.length !== samples[index]!.responseTokenIds.length)) {
    throw new LudicError(`the rollout worker's reference log-probs do not match the batch (${logprobs.length} rows for ${samples.length} samples)`)
  }
  return logprobs
}
