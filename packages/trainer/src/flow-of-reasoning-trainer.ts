import * as tf from '@tensorflow/tfjs-core'
import {
  createRandom,
  deriveSeed,
  InvalidArgumentError,
  parseArgument,
  tokenizerSchema,
  type ChatMessage,
  type ChatTemplateFunction,
  type EnvironmentV1,
  type Random,
  type TokenizerV1,
} from '@ludic/core'
import { CausalLanguageModel, checkVocabularyFits, clipGradientsByGlobalNorm, computeGradients, createAdamW, sequenceLogprobs } from '@ludic/model'
import { createLogPartition, readLossMetrics, trajectoryBalanceLoss } from '@ludic/objectives'
import { z } from 'zod'
import { actionLogprobs } from './action-logprobs.js'
import { plainConfig } from './loggers/run-loggers.js'
import type { UpdateStepMetrics } from './metrics-log.js'
import type { PromptFunction } from '@ludic/rollout'
import { optimizerConfigSchema } from './optimizer-config.js'
import { createRewardReplayBuffer, type RewardReplayBufferState } from './reward-replay-buffer.js'
import { createStepwiseEnvironments, type StepwiseEnvironments, type StepwiseEpisode, type StepwiseProblem } from './stepwise-environments.js'
import { createTrainerSkeleton, runConfigFields, trainerWith, type TrainerControls, type TrainerRunOptions } from './skeleton.js'
import { trajectoryFormat, trajectoryLogConfigSchema, type TrajectoryRecord } from './trajectory-log.js'
import { boundedTrajectoryLine, sampledEpisodes } from './trajectory-records.js'

const functionOf = <T>(message: string) => z.custom<T>((value) => typeof value === 'function', message)
const unitInterval = z.number().min(0).max(1)

export const flowOfReasoningTrainerConfigSchema = z.strictObject({
  model: z.instanceof(CausalLanguageModel, { message: 'must be a CausalLanguageModel (createModel, loadModel)' }),
  /** Needs an end token: an action is scored as its tokens and the end token (`actionLogprobs`). */
  tokenizer: tokenizerSchema,
  /**
   * The step-wise tasks, as core's environments (`EnvironmentV1` factories, as every trainer takes them): one role
   * each, ids distinct, deterministic for a seed. A state is `reset(seed)` and the actions so far (replayed, so
   * sampling branches from any state); the actions allowed there are its `TurnView.legalActions`; an action that
   * ends the episode (`done` or `truncated`) completes the trajectory, rewarded by the role's summed rewards.
   */
  environments: z
    .array(functionOf<() => EnvironmentV1>('must be a function that creates an environment'))
    .min(1, 'needs at least one environment factory')
    .max(1024),
  /** The reset seeds: each (environment, seed) is a training problem (its log Z and replay buffer, keyed `<environment id>/<seed>`). */
  seeds: z
    .array(z.number().int().refine(Number.isSafeInteger, 'must be a safe integer'))
    .min(1, 'needs at least one seed')
    .max(1_000_000)
    .refine((seeds) => new Set(seeds).size === seeds.length, 'must be distinct'),
  /** A state's prompt from its `TurnView` and the turns so far (rollout's `PromptTemplate`, as `createRlTrainer`'s). Default `'{observation}'`. */
  prompt: z.union([z.string(), functionOf<PromptFunction>('must be a string or a function')]).default('{observation}'),
  /** How the prompt's messages become the text the model reads (a Jinja source or a function, the generation prompt on). Default: the tokenizer's chat template. */
  chatTemplate: z
    .union([
      z.string().min(1),
      functionOf<ChatTemplateFunction | ((messages: readonly ChatMessage[]) => string)>('must be a Jinja source or a function (messages) => string'),
    ])
    .optional(),
  /**
   * log R of a finished episode (finite). Default: `Math.log(episode.return)`, the log of the role's summed rewards,
   * so an environment's rewards must be positive (FoR's Game of 24: `successReward: 100, failureReward: 0.001`).
   */
  logReward: functionOf<(episode: StepwiseEpisode) => number>('must be a function (episode) => number').optional(),
  /** Whether an episode solved its problem (the success rate): a function, or the least return that counts. Default 1 (the games' `successReward`). */
  solved: z.union([z.number().finite(), functionOf<(episode: StepwiseEpisode) => boolean>('must be a number or a function (episode) => boolean')]).default(1),
  /** Σ_t log P_B of a finished episode. Default 0: a state (the actions so far) has one parent. */
  backwardLogprob: functionOf<(episode: StepwiseEpisode) => number>('must be a function (episode) => number').optional(),
  /** Planned steps: the schedules below anneal over the first `annealFraction` of them. Default 100. */
  steps: z.number().int().positive().default(100),
  /** Share of `steps` over which β, ε, the temperature and the replay probability move from start to end (linearly). Default 0.5 (FoR). */
  annealFraction: z.number().gt(0).max(1).default(0.5),
  /** Problems per step, each drawn uniformly (seeded) from every (environment, seed). Default 1 (FoR: one problem per batch). */
  problemsPerStep: z.number().int().positive().max(1024).default(1),
  /** n: trajectories sampled (or replayed) per problem. Default 4 (FoR's `n_samples`). */
  samplesPerProblem: z.number().int().positive().max(1024).default(4),
  /** An episode not finished after this many actions is an error (a bound on the task). Default 32. */
  maxTrajectoryLength: z.number().int().positive().max(1024).default(32),
  /** β, the reward exponent (log R × β): from `start` to `end` over the annealing. Default 1 → 2 (FoR). */
  rewardExponent: z.strictObject({ start: z.number().positive().default(1), end: z.number().positive().default(2) }).prefault({}),
  replay: z
    .strictObject({
      /** Probability that a problem's batch is replayed from its buffer instead of sampled: start → end. Default 0.25 → 0.5 (FoR). */
      probabilityStart: unitInterval.default(0.25),
      probabilityEnd: unitInterval.default(0.5),
      /** Trajectories kept per problem (the highest log R, each plan once). Default 50 (FoR). */
      capacity: z.number().int().positive().max(100_000).default(50),
    })
    .prefault({}),
  exploration: z
    .strictObject({
      /** Probability that a sampled trajectory is tempered (log-probs divided by the temperature). Default 0.5 (FoR). */
      temperedShare: unitInterval.default(0.5),
      /** Temperature of tempered trajectories: start → end. Default 2 → 1 (FoR uses 4 or 2; a tiny model's policy is flat already). */
      temperatureStart: z.number().positive().default(2),
      temperatureEnd: z.number().positive().default(1),
      /** ε: at each step, probability of a uniformly random allowed action: start → end. Default 0.3 → 0.01 (FoR). */
      epsilonStart: unitInterval.default(0.3),
      epsilonEnd: unitInterval.default(0.01),
    })
    .prefault({}),
  localSearch: z
    .strictObject({
      /** Random completions of the best on-policy trajectory's prefix per sampled batch; 0: no local search. Default 16 (FoR). */
      tries: z.number().int().min(0).max(10_000).default(16),
      /** Actions of the best trajectory kept, as a share of its length (floored). Default 0.5 (FoR's K = n_steps / 2). */
      keepShare: unitInterval.default(0.5),
    })
    .prefault({}),
  logPartition: z
    .strictObject({
      /** `learned`: a log Z per problem (`createLogPartition`); `batch-mean`: the batch's estimate (`trajectoryBalanceLoss`). Default `learned`. */
      mode: z.enum(['learned', 'batch-mean']).default('learned'),
      /** log Z of a problem seen for the first time. Default 5 (FoR's `logZ_init`). */
      initial: z.number().finite().default(5),
      /** log Z's learning rate as a multiple of the policy's (`createLogPartition`). Default 100. */
      learningRateMultiplier: z.number().positive().finite().default(100),
    })
    .prefault({}),
  /** AdamW of the policy and log Z (log Z gets no weight decay and is not clipped with the policy). */
  optimizer: optimizerConfigSchema.prefault({ learningRate: 5e-4 }),
  /** Sequences per forward pass when scoring actions without a gradient. Default 512. */
  scoringBatchSize: z.number().int().positive().default(512),
  /** Seeds the problems drawn, replay, sampling, ε, tempering and local search. Default 0. */
  seed: z.number().int().default(0),
  /**
   * `trajectories.jsonl` in `runDirectory`: a seeded sample of each step's trajectories, one bounded line each, every
   * action a turn with its tokens, their log-probs and log P_F (see `trajectoryLogConfigSchema`). Default: on, 4 per
   * step, lines of at most 256 KiB.
   */
  trajectories: trajectoryLogConfigSchema.prefault({}),
  /** `metrics.jsonl`, `trajectories.jsonl` and checkpoints (with the replay buffers and log Z) go to `runDirectory` (see `runConfigFields`). */
  ...runConfigFields,
  /** Told each step's metrics (as `run`'s `onStep`). */
  onStep: functionOf<(metrics: FlowOfReasoningStepMetrics) => void>('must be a function (metrics) => void').optional(),
})
export type FlowOfReasoningTrainerConfig = z.input<typeof flowOfReasoningTrainerConfigSchema>

/** One step's figures (plain numbers); `loss` is trajectory balance's mean δ². */
export type FlowOfReasoningStepMetrics = UpdateStepMetrics & {
  /** Mean residual δ = log Z + Σ log P_F − β·log R − Σ log P_B. */
  residualMean: number
  logZMean: number
  /** Mean R (= exp log R) and share solved of the trajectories trained on. */
  rewardMean: number
  successRate: number
  /** Trajectories trained on, of them replayed from the buffer, and those local search added. */
  trajectories: number
  replayShare: number
  localSearchAccepts: number
  /** Trajectories the policy sampled this step (0 on a replayed batch) and how many solved the problem. */
  freshSamples: number
  freshSuccesses: number
  /** Trajectories in the replay buffers, over every problem. */
  bufferSize: number
  /** This step's schedules. */
  rewardExponent: number
  temperature: number
  epsilon: number
  replayProbability: number
  /** Wall time of the step. */
  seconds: number
}

/** `run`'s options: `steps` is the total to reach. Default: `config.steps`. */
export type FlowOfReasoningRunOptions = TrainerRunOptions<FlowOfReasoningStepMetrics>

export interface FlowOfReasoningTrainer extends TrainerControls<FlowOfReasoningStepMetrics> {
  /** Updates until `steps` have been taken in total (default `config.steps`; a resumed run continues to it). */
  run(options?: FlowOfReasoningRunOptions): Promise<FlowOfReasoningStepMetrics[]>
  /** log Z of each problem seen (learned mode). */
  logPartitionState(): { keys: string[]; values: number[] }
}

/** A trajectory of a batch: its problem, actions, log R and where it came from. */
interface BatchTrajectory {
  problem: StepwiseProblem
  key: string
  actions: readonly string[]
  logReward: number
  source: 'on-policy' | 'replay' | 'local-search'
}

const logZParameterName = 'flowOfReasoning.logZ'
const linear = (start: number, end: number, progress: number) => start + (end - start) * progress

/**
 * Flow of Reasoning (FoR; Yu et al. 2024, https://arxiv.org/abs/2406.05673): the model is the forward policy
 * P_F of a GFlowNet over reasoning steps, trained with trajectory balance (Malkin et al. 2022) so that it
 * samples complete trajectories with probability ∝ R^β, i.e. many different high-reward solutions, not one.
 * P_F(a|s) is the model's probability of the action's text, normalised over the actions allowed at s
 * (`actionLogprobs`, then a softmax: the model restricted to legal steps). Each problem of a step:
 *
 *   with probability p_replay (0.25 → 0.5):  n trajectories drawn uniformly from the problem's buffer (log R stored)
 *   otherwise:  n trajectories sampled, each tempered (log P_F / T) with probability ½, with ε-uniform steps;
 *               all go to the buffer; local search keeps the first K = ⌊len/2⌋ actions of the best one, completes
 *               them uniformly at random (16 tries) and adds each completion that beats its log R
 *   δ(τ) = log Z(x) + Σ_t log P_F(s_{t+1}|s_t) − β·log R(τ) − Σ_t log P_B(s_t|s_{t+1}),   L = mean δ²   (current policy)
 *
 * β, T, ε and p_replay move linearly over the first half of `steps`. log Z(x) is learned per problem with its
 * own learning-rate multiplier (`createLogPartition`), or the batch's estimate. AdamW; the policy's gradient
 * is clipped to `maxGradNorm`, log Z's is not.
 */
export function createFlowOfReasoningTrainer(config: FlowOfReasoningTrainerConfig): FlowOfReasoningTrainer {
  const parsed = parseArgument(flowOfReasoningTrainerConfigSchema, config, 'config')
  const { model, tokenizer, samplesPerProblem, maxTrajectoryLength, scoringBatchSize } = parsed
  checkVocabularyFits(tokenizer, model.config)
  if (tokenizer.eosTokenId === undefined) {
    throw new InvalidArgumentError({ argument: 'config.tokenizer', value: undefined, message: 'needs an end token (eosTokenId): it ends every scored action' })
  }
  const states = createStepwiseEnvironments(tokenizer, parsed.environments, { prompt: parsed.prompt, chatTemplate: parsed.chatTemplate }, 'config.environments')
  // The problems, environment by environment, each seed in order.
  const problems: StepwiseProblem[] = parsed.environments.flatMap((_, environment) => parsed.seeds.map((seed) => ({ environment, seed })))
  const keyOf = (problem: StepwiseProblem) => `${states.ids[problem.environment]}/${problem.seed}`
  const solvedBy = parsed.solved
  const solved = (episode: StepwiseEpisode) => (typeof solvedBy === 'number' ? episode.return >= solvedBy : solvedBy(episode))
  const learned = parsed.logPartition.mode === 'learned'
  const partition = learned
    ? createLogPartition({ initial: parsed.logPartition.initial, learningRateMultiplier: parsed.logPartition.learningRateMultiplier, maxPrompts: 65_536 })
    : undefined
  const parameters = new Map(model.trainableParameters())
  if (partition !== undefined) parameters.set(logZParameterName, partition.variables()[0]!)
  const { maxGradNorm, learningRate, ...adamW } = parsed.optimizer
  const optimizer = createAdamW(parameters, { ...adamW, learningRate, excludeFromWeightDecay: [logZParameterName] })
  const buffer = createRewardReplayBuffer({ capacity: parsed.replay.capacity })
  let random: Random = createRandom(deriveSeed('ludic.flow-of-reasoning', parsed.seed))
  // trajectories.jsonl: written when the run has a directory.
  const trajectoryLog = parsed.runDirectory !== undefined && parsed.trajectories.enabled ? parsed.trajectories : undefined

  const tooLong = (actions: readonly string[]) =>
    new InvalidArgumentError({
      argument: 'config.maxTrajectoryLength',
      value: maxTrajectoryLength,
      message: `is exceeded: the episode goes on after ${actions.length} actions`,
    })
  /** The finished episode of a complete trajectory. */
  const episodeOf = (problem: StepwiseProblem, actions: readonly string[]): StepwiseEpisode => {
    const state = states.state(problem, actions)
    if (!state.done) throw new InvalidArgumentError({ argument: 'actions', value: actions, message: `do not finish the episode of ${keyOf(problem)}` })
    return state.episode
  }
  const complete = (problem: StepwiseProblem, actions: readonly string[]) => {
    if (actions.length > maxTrajectoryLength) throw tooLong(actions)
    const episode = episodeOf(problem, actions)
    const logReward = parsed.logReward === undefined ? Math.log(episode.return) : parsed.logReward(episode)
    if (!Number.isFinite(logReward)) {
      throw new InvalidArgumentError({
        argument: 'config.logReward',
        value: logReward,
        message: `must be finite (${keyOf(problem)} after ${JSON.stringify(actions)}${parsed.logReward === undefined ? `: the default is log of the return, ${episode.return}, so the environment's rewards must be positive` : ''})`,
      })
    }
    return logReward
  }

  /** FoR's local search: the best trajectory's first K actions, completed uniformly at random; completions beating it. */
  const localSearch = (problem: StepwiseProblem, key: string, sampled: readonly BatchTrajectory[]): BatchTrajectory[] => {
    const best = sampled.reduce((top, trajectory) => (trajectory.logReward > top.logReward ? trajectory : top))
    const keep = Math.floor(best.actions.length * parsed.localSearch.keepShare)
    const seen = new Set(sampled.map((trajectory) => JSON.stringify(trajectory.actions)))
    const accepted: BatchTrajectory[] = []
    for (let attempt = 0; attempt < parsed.localSearch.tries; attempt++) {
      const actions = best.actions.slice(0, keep)
      for (let state = states.state(problem, actions); !state.done; state = states.state(problem, actions)) {
        if (actions.length >= maxTrajectoryLength) throw tooLong([...actions, ''])
        actions.push(state.legalActions[random.nextInt(state.legalActions.length)]!)
      }
      const logReward = complete(problem, actions)
      const plan = JSON.stringify(actions)
      if (logReward > best.logReward && !seen.has(plan)) {
        seen.add(plan)
        accepted.push({ problem, key, actions, logReward, source: 'local-search' })
      }
    }
    return accepted
  }

  const update = async (stepIndex: number) => {
    const started = performance.now()
    states.clear()
    const progress = Math.min(1, stepIndex / Math.max(1, parsed.annealFraction * parsed.steps))
    const beta = linear(parsed.rewardExponent.start, parsed.rewardExponent.end, progress)
    const temperature = linear(parsed.exploration.temperatureStart, parsed.exploration.temperatureEnd, progress)
    const epsilon = linear(parsed.exploration.epsilonStart, parsed.exploration.epsilonEnd, progress)
    const replayProbability = linear(parsed.replay.probabilityStart, parsed.replay.probabilityEnd, progress)
    const batch: BatchTrajectory[] = []
    let freshSamples = 0
    let freshSuccesses = 0
    let localSearchAccepts = 0
    for (let index = 0; index < parsed.problemsPerStep; index++) {
      const problem = random.choice(problems)
      const key = keyOf(problem)
      if (buffer.size(key) > 0 && random.nextFloat() < replayProbability) {
        for (const stored of buffer.sample(key, samplesPerProblem, random)) batch.push({ problem, key, ...stored, source: 'replay' })
        continue
      }
      const temperatures = Array.from({ length: samplesPerProblem }, () => (random.nextFloat() < parsed.exploration.temperedShare ? temperature : 1))
      const sampled = (
        await sampleStepwiseTrajectories(model, tokenizer, states, problem, { temperatures, epsilon, random, maxTrajectoryLength, scoringBatchSize })
      ).map(({ actions }): BatchTrajectory => ({ problem, key, actions, logReward: complete(problem, actions), source: 'on-policy' }))
      freshSamples += sampled.length
      freshSuccesses += sampled.filter((trajectory) => solved(episodeOf(problem, trajectory.actions))).length
      const accepted = parsed.localSearch.tries > 0 ? localSearch(problem, key, sampled) : []
      localSearchAccepts += accepted.length
      for (const trajectory of [...sampled, ...accepted]) {
        buffer.add(key, { actions: trajectory.actions, logReward: trajectory.logReward })
        batch.push(trajectory)
      }
    }

    const backward =
      parsed.backwardLogprob === undefined ? undefined : batch.map((trajectory) => parsed.backwardLogprob!(episodeOf(trajectory.problem, trajectory.actions)))
    const plan = forwardPlan(tokenizer, states, batch)
    // batch-mean: the loss estimates log Z per problem from the batch (`promptKeys`).
    const keys = batch.map((trajectory) => trajectory.key)
    let metricTensors: ReturnType<typeof trajectoryBalanceLoss>['metrics'] | undefined
    // For trajectories.jsonl: each chosen action's log P_F and its tokens' log-probs, read from the same forward pass.
    const recorded: RecordedScores | undefined = trajectoryLog !== undefined ? {} : undefined
    const { loss, gradients } = computeGradients(
      () =>
        tf.tidy(() => {
          const forwardLogprobs = forwardLogprobsOf(model, plan, recorded) // [batch]
          const result = trajectoryBalanceLoss(
            {
              forwardLogprobs,
              logRewards: tf.tensor1d(batch.map((trajectory) => trajectory.logReward)),
              ...(partition !== undefined ? { logZ: partition.get(keys) } : { promptKeys: keys }),
              ...(backward === undefined ? {} : { backwardLogprobs: tf.tensor1d(backward) }),
            },
            { rewardExponent: beta, logPartition: parsed.logPartition.mode },
          )
          metricTensors = result.metrics
          return result.loss
        }),
      parameters,
    )
    const policyGradients = new Map([...gradients].filter(([name]) => name !== logZParameterName))
    const clipped = clipGradientsByGlobalNorm(policyGradients, maxGradNorm)
    const logZGradient = gradients.get(logZParameterName)
    const update = new Map(clipped.gradients)
    if (logZGradient !== undefined) update.set(logZParameterName, logZGradient)
    optimizer.step(update, { learningRate })
    tf.dispose([loss, ...gradients.values(), ...clipped.gradients.values()])
    const figures = await readLossMetrics(metricTensors!)
    const stepCount = stepIndex + 1
    const trajectoryLines = recorded && (await trajectoryLinesOf(batch, plan, recorded, stepCount))
    const metrics: FlowOfReasoningStepMetrics = {
      step: stepCount,
      loss: figures.loss,
      residualMean: figures.residualMean,
      logZMean: figures.logZMean,
      rewardMean: mean(batch.map((trajectory) => Math.exp(trajectory.logReward))),
      successRate: mean(batch.map((trajectory) => (solved(episodeOf(trajectory.problem, trajectory.actions)) ? 1 : 0))),
      trajectories: batch.length,
      replayShare: batch.filter((trajectory) => trajectory.source === 'replay').length / batch.length,
      localSearchAccepts,
      freshSamples,
      freshSuccesses,
      bufferSize: buffer.totalSize,
      rewardExponent: beta,
      temperature,
      epsilon,
      replayProbability,
      grad_norm: clipped.norm,
      learning_rate: learningRate,
      seconds: (performance.now() - started) / 1000,
    }
    const record = async () => {
      await skeleton.runState.logTrajectories(stepCount, trajectoryLines || [])
      parsed.onStep?.(metrics)
    }
    return { metrics, record }
  }

  /** The lines of the step's sampled trajectories: each action a turn, with its tokens' log-probs and log P_F. */
  const trajectoryLinesOf = async (batch: readonly BatchTrajectory[], plan: ForwardPlan, recorded: RecordedScores, step: number): Promise<string[]> => {
    // (No action in the whole batch: nothing was scored.)
    const [chosen, tokenLogprobs] = await Promise.all([recorded.chosen?.data() ?? new Float32Array(), recorded.tokens?.data() ?? new Float32Array()])
    const width = recorded.tokens?.shape[1] ?? 0
    tf.dispose([recorded.chosen, recorded.tokens].filter((tensor) => tensor !== undefined))
    // Each trajectory's first step in the plan's chosen steps (laid out trajectory by trajectory).
    const firstStep: number[] = []
    let offset = 0
    for (const trajectory of batch) {
      firstStep.push(offset)
      offset += trajectory.actions.length
    }
    const { episodesPerStep, maxLineBytes } = trajectoryLog!
    return sampledEpisodes(batch.length, episodesPerStep, parsed.seed, step).flatMap((index) => {
      const trajectory = batch[index]!
      const last = trajectory.actions.length - 1
      const episode = episodeOf(trajectory.problem, trajectory.actions)
      const turns = trajectory.actions.map((action, depth) => {
        const state = openState(states, trajectory.problem, trajectory.actions, depth)
        const at = firstStep[index]! + depth
        const tokenIds = plan.responseIds[plan.chosenPairs[at]!]!
        const row = Array.from(tokenLogprobs.subarray(at * width, at * width + tokenIds.length))
        return {
          index: depth,
          role: episode.role,
          observation: state.view.observation,
          legalActions: [...state.legalActions],
          ...(state.view.stateKey === undefined ? {} : { stateKey: state.view.stateKey }),
          action,
          rewards: { [episode.role]: depth === last ? trajectory.logReward : 0 },
          invalidAction: false,
          trained: true,
          prompt: state.prompt,
          response: action,
          tokens: Array.from(tokenIds, (id) => tokenizer.decode([id])),
          tokenIds: Array.from(tokenIds),
          logprobs: row.map((value) => (Number.isFinite(value) ? value : null)),
          actionLogprob: Number.isFinite(chosen[at]!) ? chosen[at]! : null,
        }
      })
      const record: TrajectoryRecord = {
        format: trajectoryFormat,
        step,
        ...(trajectory.source === 'on-policy' ? { policyVersion: step - 1 } : {}),
        trainer: 'for',
        episode: {
          id: `step-${step}/${index}`,
          environmentId: episode.environmentId,
          seed: episode.seed,
          groupId: trajectory.key,
          roles: [episode.role],
          returns: { [episode.role]: trajectory.logReward },
          done: episode.outcome.done,
          truncated: episode.outcome.truncated,
          external: false,
          source: trajectory.source,
        },
        turns,
      }
      const line = boundedTrajectoryLine(record, maxLineBytes)
      return line === undefined ? [] : [line]
    })
  }

  const skeleton = createTrainerSkeleton<FlowOfReasoningStepMetrics>({
    name: 'flow-of-reasoning',
    model,
    optimizer,
    run: parsed,
    plainConfig: () =>
      plainConfig(parsed, [
        'model',
        'tokenizer',
        'environments',
        'prompt',
        'chatTemplate',
        'logReward',
        'solved',
        'backwardLogprob',
        'onStep',
        'loggers',
        'loggedConfig',
      ]),
    // The checkpoint holds log Z's table beside the model's weights (its keys in the trainer's state).
    parameters: partition === undefined ? model.parameters() : new Map([...model.parameters(), [logZParameterName, partition.variables()[0]!]]),
    update,
    random: () => random,
    saveState: () => ({ buffer: buffer.getState(), logZKeys: partition?.getState().keys ?? [] }),
    restoreState(state, restored) {
      random = restored
      const saved = (state ?? {}) as { buffer?: RewardReplayBufferState; logZKeys?: string[] }
      buffer.setState(saved.buffer ?? [])
      if (partition !== undefined) {
        // The table's values came with the weights, exactly; `setState` sets its keys (and rewrites the values, so they are put back).
        const variable = partition.variables()[0]!
        const values = tf.clone(variable)
        partition.setState({ keys: saved.logZKeys ?? [], values: (saved.logZKeys ?? []).map(() => 0) })
        variable.assign(values)
        values.dispose()
      }
    },
    progressFields: (metrics) => ({ loss: metrics.loss, success: metrics.successRate }),
    dispose() {
      optimizer.dispose()
      partition?.dispose()
    },
  })
  const trainer = trainerWith(skeleton, {
    optimizer,
    run: ({ steps = parsed.steps, ...options }: FlowOfReasoningRunOptions = {}) => skeleton.run({ ...options, steps }),
    logPartitionState: () => partition?.getState() ?? { keys: [], values: [] },
  })
  return trainer
}

export interface StepwiseSamplingOptions {
  /** One temperature per trajectory (its count): the sampling distribution is softmax(log P_F / T). */
  temperatures: readonly number[]
  /** Probability of a uniformly random allowed action at each step. Default 0. */
  epsilon?: number
  random: Random
  /** A trajectory longer than this is an error. Default 32. */
  maxTrajectoryLength?: number
  /** Sequences per forward pass. Default 512. */
  scoringBatchSize?: number
}

/**
 * Samples complete trajectories of `problem` (an environment and its reset seed) from the model restricted to the
 * legal actions: at each state every legal action is scored (`actionLogprobs`), the scores are normalised
 * (log-softmax) and divided by the trajectory's temperature, and with probability ε the action is uniform instead.
 * The trajectories advance together, one step at a time, and a state reached by several of them (the same prompt)
 * is scored once. No gradient. One finished episode per temperature, in order.
 */
export async function sampleStepwiseTrajectories(
  model: CausalLanguageModel,
  tokenizer: TokenizerV1,
  environments: StepwiseEnvironments,
  problem: StepwiseProblem,
  options: StepwiseSamplingOptions,
): Promise<StepwiseEpisode[]> {
  const { temperatures, random, epsilon = 0, maxTrajectoryLength = 32, scoringBatchSize = 512 } = options
  const trajectories = temperatures.map(() => [] as string[])
  const scored = new Map<string, { actions: readonly string[]; logprobs: number[] }>()
  for (let depth = 0; ; depth++) {
    const open = trajectories.flatMap((actions, index) => {
      const state = environments.state(problem, actions)
      return state.done ? [] : [{ index, actions, state }]
    })
    if (open.length === 0) return trajectories.map((actions) => (environments.state(problem, actions) as { episode: StepwiseEpisode }).episode)
    if (depth >= maxTrajectoryLength) {
      throw new InvalidArgumentError({
        argument: 'maxTrajectoryLength',
        value: maxTrajectoryLength,
        message: `is exceeded: the episode goes on after ${depth} actions`,
      })
    }
    const prompts = open.map((entry) => entry.state.prompt)
    const missing = [...new Set(prompts)].filter((prompt) => !scored.has(prompt))
    const decisions = missing.map((prompt) => ({ prompt, actions: open[prompts.indexOf(prompt)]!.state.legalActions }))
    const scores = decisions.length === 0 ? [] : await actionLogprobs(model, tokenizer, decisions, { batchSize: scoringBatchSize })
    decisions.forEach((decision, index) => scored.set(decision.prompt, { actions: decision.actions, logprobs: logSoftmax(scores[index]!) }))
    open.forEach((entry, position) => {
      const { actions, logprobs } = scored.get(prompts[position]!)!
      const temperature = temperatures[entry.index]!
      const choice =
        epsilon > 0 && random.nextFloat() < epsilon ? random.nextInt(actions.length) : random.sampleIndex(softmax(logprobs.map((value) => value / temperature)))
      entry.actions.push(actions[choice]!)
    })
  }
}

/**
 * `[trajectories]` Σ_t log P_F(a_t|s_t) of complete or partial trajectories under `model`, P_F the model's
 * probability of each action's text (+ end token) normalised over the legal actions at its state: the
 * differentiable log-probabilities the trajectory balance loss uses, for other objectives over the same
 * restricted policy (e.g. a policy gradient baseline). Every state's legal actions go through one forward
 * pass; a state shared by several trajectories is scored once. Call it inside the loss function (a tidy).
 */
export function stepwiseForwardLogprobs(
  model: CausalLanguageModel,
  tokenizer: TokenizerV1,
  environments: StepwiseEnvironments,
  trajectories: readonly { problem: StepwiseProblem; actions: readonly string[] }[],
): tf.Tensor1D {
  if (tokenizer.eosTokenId === undefined) {
    throw new InvalidArgumentError({ argument: 'tokenizer', value: undefined, message: 'needs an end token (eosTokenId): it ends every scored action' })
  }
  return forwardLogprobsOf(model, forwardPlan(tokenizer, environments, trajectories))
}

/** The open state before the trajectory's action at `depth` (an error if the episode ended before it). */
function openState(environments: StepwiseEnvironments, problem: StepwiseProblem, actions: readonly string[], depth: number) {
  const state = environments.state(problem, actions.slice(0, depth))
  if (state.done)
    throw new InvalidArgumentError({
      argument: 'actions',
      value: actions[depth],
      message: `follows the end of the episode of ${environments.ids[problem.environment]} (seed ${problem.seed}) after ${JSON.stringify(actions.slice(0, depth))}`,
    })
  return state
}

/** What the differentiated forward pass needs: each distinct state's allowed actions as sequences, and each step's choice. */
interface ForwardPlan {
  /** Every (state, allowed action) pair: the prompt's and the action's (+ end token) ids. */
  promptIds: Int32Array[]
  responseIds: Int32Array[]
  /** `[states, widest]` indices into the pairs (padding 0) and its 0/1 mask. */
  stateActions: Int32Array
  stateMask: Float32Array
  states: number
  widest: number
  /** For each step of each trajectory: the chosen pair, its state and its trajectory. */
  chosenPairs: Int32Array
  chosenStates: Int32Array
  chosenTrajectories: Int32Array
  trajectories: number
}

function forwardPlan(
  tokenizer: TokenizerV1,
  environments: StepwiseEnvironments,
  batch: readonly { problem: StepwiseProblem; actions: readonly string[] }[],
): ForwardPlan {
  const encode = (text: string) => tokenizer.encode(text, { addSpecialTokens: false })
  const end = tokenizer.eosTokenId!
  const promptIds: Int32Array[] = []
  const responseIds: Int32Array[] = []
  const states = new Map<string, { index: number; pairs: Map<string, number> }>()
  const actionIds = new Map<string, Int32Array>()
  const chosenPairs: number[] = []
  const chosenStates: number[] = []
  const chosenTrajectories: number[] = []
  const stateRows: number[][] = []
  batch.forEach((trajectory, trajectoryIndex) => {
    trajectory.actions.forEach((action, depth) => {
      const open = openState(environments, trajectory.problem, trajectory.actions, depth)
      const prompt = open.prompt
      let state = states.get(prompt)
      if (state === undefined) {
        const ids = encode(prompt)
        const pairs = new Map<string, number>()
        // The legal actions are distinct (`StepwiseState.legalActions`).
        for (const allowed of open.legalActions) {
          let response = actionIds.get(allowed)
          if (response === undefined) {
            response = Int32Array.from([...encode(allowed), end])
            actionIds.set(allowed, response)
          }
          pairs.set(allowed, promptIds.length)
          promptIds.push(ids)
          responseIds.push(response)
        }
        state = { index: states.size, pairs }
        states.set(prompt, state)
        stateRows.push([...pairs.values()])
      }
      const pair = state.pairs.get(action)
      if (pair === undefined) {
        throw new InvalidArgumentError({
          argument: 'actions',
          value: action,
          message: `is not a legal action of ${environments.ids[trajectory.problem.environment]} (seed ${trajectory.problem.seed}) after ${JSON.stringify(trajectory.actions.slice(0, depth))} (a replayed plan must stay legal)`,
        })
      }
      chosenPairs.push(pair)
      chosenStates.push(state.index)
      chosenTrajectories.push(trajectoryIndex)
    })
  })
  const widest = Math.max(1, ...stateRows.map((row) => row.length))
  const stateActions = new Int32Array(stateRows.length * widest)
  const stateMask = new Float32Array(stateRows.length * widest)
  stateRows.forEach((row, state) =>
    row.forEach((pair, column) => {
      stateActions[state * widest + column] = pair
      stateMask[state * widest + column] = 1
    }),
  )
  return {
    promptIds,
    responseIds,
    stateActions,
    stateMask,
    states: stateRows.length,
    widest,
    chosenPairs: Int32Array.from(chosenPairs),
    chosenStates: Int32Array.from(chosenStates),
    chosenTrajectories: Int32Array.from(chosenTrajectories),
    trajectories: batch.length,
  }
}

/** Tensors kept from the forward pass for `trajectories.jsonl` (the caller disposes them). */
interface RecordedScores {
  /** `[steps]` log P_F(a_t|s_t) of each chosen action. */
  chosen?: tf.Tensor1D
  /** `[steps, responseLength]` the log-prob of each token of each chosen action (0 past its end). */
  tokens?: tf.Tensor2D
}

/**
 * `[trajectories]` Σ_t log P_F(a_t|s_t), P_F the model's action probabilities normalised over the allowed actions.
 * Differentiable; inside a tidy. With `recorded`, the chosen actions' log P_F and token log-probs are kept there too
 * (values of the same pass, off the loss's path: the gradient is the same).
 */
function forwardLogprobsOf(model: CausalLanguageModel, plan: ForwardPlan, recorded?: RecordedScores): tf.Tensor1D {
  if (plan.chosenPairs.length === 0) return tf.zeros([plan.trajectories])
  const { logprobs } = sequenceLogprobs(model, { promptIds: plan.promptIds, responseIds: plan.responseIds })
  const scores = tf.sum(logprobs, 1) // [pairs]: log P(action text + end | state)
  const grid = tf.gather(scores, tf.tensor2d(plan.stateActions, [plan.states, plan.widest], 'int32')) // [states, widest]
  const mask = tf.tensor2d(plan.stateMask, [plan.states, plan.widest])
  const stateLogNormaliser = tf.logSumExp(tf.add(grid, tf.mul(tf.sub(mask, 1), 1e9)), 1) // [states]
  const chosenPairs = tf.tensor1d(plan.chosenPairs, 'int32')
  const chosen = tf.sub(tf.gather(scores, chosenPairs), tf.gather(stateLogNormaliser, tf.tensor1d(plan.chosenStates, 'int32'))) // [steps]
  if (recorded !== undefined) {
    recorded.chosen = tf.keep(tf.clone(chosen)) as tf.Tensor1D
    recorded.tokens = tf.keep(tf.gather(logprobs, chosenPairs)) as tf.Tensor2D // [steps, responseLength]
  }
  const membership = tf.oneHot(tf.tensor1d(plan.chosenTrajectories, 'int32'), plan.trajectories) // [steps, trajectories]
  return tf.squeeze(tf.matMul(tf.expandDims(chosen, 0), tf.cast(membership, 'float32')), [0]) as tf.Tensor1D // [trajectories]
}

function logSoftmax(values: readonly number[]): number[] {
  const top = Math.max(...values)
  const normaliser = top + Math.log(values.reduce((total, value) => total + Math.exp(value - top), 0))
  return values.map((value) => value - normaliser)
}

function softmax(values: readonly number[]): number[] {
  const top = Math.max(...values)
  const weights = values.map((value) => Math.exp(value - top))
  const total = weights.reduce((sum, value) => sum + value, 0)
  return weights.map((value) => value / total)
}

const mean = (values: readonly number[]) => values.reduce((total, value) => total + value, 0) / Math.max(1, values.length)
