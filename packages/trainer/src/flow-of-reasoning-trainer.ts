import * as tf from '@tensorflow/tfjs-core'
import { createRandom, deriveSeed, InvalidArgumentError, parseArgument, tokenizerSchema, type Random, type TokenizerV1 } from '@ludic/core'
import { CausalLanguageModel, checkVocabularyFits, clipGradientsByGlobalNorm, computeGradients, createAdamW, sequenceLogprobs } from '@ludic/model'
import { createLogPartition, readLossMetrics, trajectoryBalanceLoss } from '@ludic/objectives'
import { z } from 'zod'
import { actionLogprobs } from './action-logprobs.js'
import { plainConfig } from './loggers/run-loggers.js'
import type { StepMetrics } from './metrics-log.js'
import { optimizerConfigSchema } from './optimizer-config.js'
import { createRewardReplayBuffer, type RewardReplayBufferState } from './reward-replay-buffer.js'
import { createTrainerSkeleton, runConfigFields, trainerWith, type TrainerControls, type TrainerRunOptions } from './skeleton.js'
import { trajectoryFormat, trajectoryLogConfigSchema, type TrajectoryRecord } from './trajectory-log.js'
import { boundedTrajectoryLine, sampledEpisodes } from './trajectory-writer.js'

/**
 * A problem solved one step at a time from a finite set of allowed actions (a reasoning step, a move): the
 * state is the problem and the actions taken so far, the transition appends an action, and a state with no
 * allowed action is complete and rewarded. Game of 24 is one (`examples/game24-diversity`).
 */
export interface StepwiseTask<Problem> {
  /** The problem's key: its log Z and its replay buffer. */
  key(problem: Problem): string
  /** The text the model reads after `actions` (chat template applied); each allowed action is scored after it. */
  prompt(problem: Problem, actions: readonly string[]): string
  /** The actions allowed after `actions` (distinct texts); empty when the trajectory is complete. */
  allowedActions(problem: Problem, actions: readonly string[]): readonly string[]
  /** log R of a complete trajectory (finite: FoR's Game of 24 gives R = 100 on success, 0.001 otherwise). */
  logReward(problem: Problem, actions: readonly string[]): number
  /** Whether a complete trajectory solves the problem (the success rate). */
  solved(problem: Problem, actions: readonly string[]): boolean
  /** Σ_t log P_B of a complete trajectory. Default 0: a state (the actions so far) has one parent. */
  backwardLogprob?(problem: Problem, actions: readonly string[]): number
}

const functionOf = <T>(message: string) => z.custom<T>((value) => typeof value === 'function', message)
const unitInterval = z.number().min(0).max(1)

export const flowOfReasoningTrainerConfigSchema = z.strictObject({
  model: z.instanceof(CausalLanguageModel, { message: 'must be a CausalLanguageModel (createModel, loadModel)' }),
  /** Needs an end token: an action is scored as its tokens and the end token (`actionLogprobs`). */
  tokenizer: tokenizerSchema,
  task: z.custom<StepwiseTask<unknown>>(
    (value) =>
      typeof value === 'object' &&
      value !== null &&
      ['key', 'prompt', 'allowedActions', 'logReward', 'solved'].every((name) => typeof (value as Record<string, unknown>)[name] === 'function'),
    'must be a StepwiseTask { key, prompt, allowedActions, logReward, solved }',
  ),
  /** The training problems; each step draws `problemsPerStep` of them uniformly (seeded). */
  problems: z.array(z.unknown()).min(1, 'needs at least one problem'),
  /** Planned steps: the schedules below anneal over the first `annealFraction` of them. Default 100. */
  steps: z.number().int().positive().default(100),
  /** Share of `steps` over which β, ε, the temperature and the replay probability move from start to end (linearly). Default 0.5 (FoR). */
  annealFraction: z.number().gt(0).max(1).default(0.5),
  /** Problems per step. Default 1 (FoR: one problem per batch). */
  problemsPerStep: z.number().int().positive().max(1024).default(1),
  /** n: trajectories sampled (or replayed) per problem. Default 4 (FoR's `n_samples`). */
  samplesPerProblem: z.number().int().positive().max(1024).default(4),
  /** A trajectory still allowed actions after this many is an error (a bound on the task). Default 32. */
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
export type FlowOfReasoningTrainerConfig<Problem = unknown> = Omit<z.input<typeof flowOfReasoningTrainerConfigSchema>, 'task' | 'problems'> & {
  task: StepwiseTask<Problem>
  problems: readonly Problem[]
}

/** One step's figures (plain numbers). */
export interface FlowOfReasoningStepMetrics extends StepMetrics {
  /** Trajectory balance: mean δ². */
  loss: number
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
  /** Global norm of the policy's gradient before clipping. */
  gradNorm: number
  learningRate: number
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
  problem: unknown
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
export function createFlowOfReasoningTrainer<Problem>(config: FlowOfReasoningTrainerConfig<Problem>): FlowOfReasoningTrainer {
  const parsed = parseArgument(flowOfReasoningTrainerConfigSchema, config, 'config')
  const { model, tokenizer, samplesPerProblem, maxTrajectoryLength, scoringBatchSize } = parsed
  const task = parsed.task as StepwiseTask<unknown>
  checkVocabularyFits(tokenizer, model.config)
  if (tokenizer.eosTokenId === undefined) {
    throw new InvalidArgumentError({ argument: 'config.tokenizer', value: undefined, message: 'needs an end token (eosTokenId): it ends every scored action' })
  }
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

  const complete = (problem: unknown, actions: readonly string[]) => {
    if (actions.length > maxTrajectoryLength) {
      throw new InvalidArgumentError({
        argument: 'config.maxTrajectoryLength',
        value: maxTrajectoryLength,
        message: `is exceeded: the task still allows actions after ${actions.length}`,
      })
    }
    const logReward = task.logReward(problem, actions)
    if (!Number.isFinite(logReward)) {
      throw new InvalidArgumentError({ argument: 'config.task.logReward', value: logReward, message: `must be finite (after ${JSON.stringify(actions)})` })
    }
    return logReward
  }

  /** FoR's local search: the best trajectory's first K actions, completed uniformly at random; completions beating it. */
  const localSearch = (problem: unknown, key: string, sampled: readonly BatchTrajectory[]): BatchTrajectory[] => {
    const best = sampled.reduce((top, trajectory) => (trajectory.logReward > top.logReward ? trajectory : top))
    const keep = Math.floor(best.actions.length * parsed.localSearch.keepShare)
    const seen = new Set(sampled.map((trajectory) => JSON.stringify(trajectory.actions)))
    const accepted: BatchTrajectory[] = []
    for (let attempt = 0; attempt < parsed.localSearch.tries; attempt++) {
      const actions = best.actions.slice(0, keep)
      for (let allowed = task.allowedActions(problem, actions); allowed.length > 0; allowed = task.allowedActions(problem, actions)) {
        actions.push(allowed[random.nextInt(allowed.length)]!)
        if (actions.length > maxTrajectoryLength) complete(problem, actions)
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
      const problem = random.choice(parsed.problems)
      const key = task.key(problem)
      if (buffer.size(key) > 0 && random.nextFloat() < replayProbability) {
        for (const stored of buffer.sample(key, samplesPerProblem, random)) batch.push({ problem, key, ...stored, source: 'replay' })
        continue
      }
      const temperatures = Array.from({ length: samplesPerProblem }, () => (random.nextFloat() < parsed.exploration.temperedShare ? temperature : 1))
      const sampled = (
        await sampleStepwiseTrajectories(model, tokenizer, task, problem, { temperatures, epsilon, random, maxTrajectoryLength, scoringBatchSize })
      ).map((actions): BatchTrajectory => ({ problem, key, actions, logReward: complete(problem, actions), source: 'on-policy' }))
      freshSamples += sampled.length
      freshSuccesses += sampled.filter((trajectory) => task.solved(problem, trajectory.actions)).length
      const accepted = parsed.localSearch.tries > 0 ? localSearch(problem, key, sampled) : []
      localSearchAccepts += accepted.length
      for (const trajectory of [...sampled, ...accepted]) {
        buffer.add(key, { actions: trajectory.actions, logReward: trajectory.logReward })
        batch.push(trajectory)
      }
    }

    const backward = task.backwardLogprob === undefined ? undefined : batch.map((trajectory) => task.backwardLogprob!(trajectory.problem, trajectory.actions))
    const plan = forwardPlan(tokenizer, task, batch)
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
      successRate: mean(batch.map((trajectory) => (task.solved(trajectory.problem, trajectory.actions) ? 1 : 0))),
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
      gradNorm: clipped.norm,
      learningRate,
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
      const turns = trajectory.actions.map((action, depth) => {
        const prefix = trajectory.actions.slice(0, depth)
        const prompt = task.prompt(trajectory.problem, prefix)
        const at = firstStep[index]! + depth
        const tokenIds = plan.responseIds[plan.chosenPairs[at]!]!
        const row = Array.from(tokenLogprobs.subarray(at * width, at * width + tokenIds.length))
        return {
          index: depth,
          role: flowOfReasoningRole,
          observation: prompt,
          legalActions: [...new Set(task.allowedActions(trajectory.problem, prefix))],
          action,
          rewards: { [flowOfReasoningRole]: depth === last ? trajectory.logReward : 0 },
          invalidAction: false,
          trained: true,
          prompt,
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
          environmentId: flowOfReasoningEnvironmentId,
          seed: Math.max(0, parsed.problems.indexOf(trajectory.problem)),
          groupId: trajectory.key,
          roles: [flowOfReasoningRole],
          returns: { [flowOfReasoningRole]: trajectory.logReward },
          done: true,
          truncated: false,
          external: false,
          source: trajectory.source,
        },
        turns,
        render: task.prompt(trajectory.problem, trajectory.actions),
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
    plainConfig: () => plainConfig(parsed, ['model', 'tokenizer', 'task', 'problems', 'onStep', 'loggers', 'loggedConfig']),
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
 * Samples complete trajectories of `problem` from the model restricted to the allowed actions: at each state
 * every allowed action is scored (`actionLogprobs`), the scores are normalised (log-softmax) and divided by the
 * trajectory's temperature, and with probability ε the action is uniform instead. The trajectories advance
 * together, one step at a time, and a state reached by several of them is scored once. No gradient.
 */
export async function sampleStepwiseTrajectories<Problem>(
  model: CausalLanguageModel,
  tokenizer: TokenizerV1,
  task: StepwiseTask<Problem>,
  problem: Problem,
  options: StepwiseSamplingOptions,
): Promise<string[][]> {
  const { temperatures, random, epsilon = 0, maxTrajectoryLength = 32, scoringBatchSize = 512 } = options
  const trajectories = temperatures.map(() => [] as string[])
  const scored = new Map<string, { actions: readonly string[]; logprobs: number[] }>()
  for (let depth = 0; ; depth++) {
    const open = trajectories
      .map((actions, index) => ({ index, actions, allowed: [...new Set(task.allowedActions(problem, actions))] }))
      .filter((entry) => entry.allowed.length > 0)
    if (open.length === 0) return trajectories
    if (depth >= maxTrajectoryLength) {
      throw new InvalidArgumentError({
        argument: 'maxTrajectoryLength',
        value: maxTrajectoryLength,
        message: `is exceeded: the task still allows actions after ${depth}`,
      })
    }
    const prompts = open.map((entry) => task.prompt(problem, entry.actions))
    const missing = [...new Set(prompts)].filter((prompt) => !scored.has(prompt))
    const decisions = missing.map((prompt) => ({ prompt, actions: open[prompts.indexOf(prompt)]!.allowed }))
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
 * probability of each action's text (+ end token) normalised over the actions allowed at its state: the
 * differentiable log-probabilities the trajectory balance loss uses, for other objectives over the same
 * restricted policy (e.g. a policy gradient baseline). Every state's allowed actions go through one forward
 * pass; a state shared by several trajectories is scored once. Call it inside the loss function (a tidy).
 */
export function stepwiseForwardLogprobs<Problem>(
  model: CausalLanguageModel,
  tokenizer: TokenizerV1,
  task: StepwiseTask<Problem>,
  trajectories: readonly { problem: Problem; actions: readonly string[] }[],
): tf.Tensor1D {
  if (tokenizer.eosTokenId === undefined) {
    throw new InvalidArgumentError({ argument: 'tokenizer', value: undefined, message: 'needs an end token (eosTokenId): it ends every scored action' })
  }
  return forwardLogprobsOf(model, forwardPlan(tokenizer, task as StepwiseTask<unknown>, trajectories))
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

function forwardPlan(tokenizer: TokenizerV1, task: StepwiseTask<unknown>, batch: readonly { problem: unknown; actions: readonly string[] }[]): ForwardPlan {
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
      const prefix = trajectory.actions.slice(0, depth)
      const prompt = task.prompt(trajectory.problem, prefix)
      let state = states.get(prompt)
      if (state === undefined) {
        const ids = encode(prompt)
        const pairs = new Map<string, number>()
        for (const allowed of task.allowedActions(trajectory.problem, prefix)) {
          if (pairs.has(allowed)) continue
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
          argument: 'task.allowedActions',
          value: action,
          message: `does not allow the trajectory's action ${JSON.stringify(action)} after ${JSON.stringify(prefix)} (a replayed plan must stay allowed)`,
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

/** The role of a Flow of Reasoning trajectory's turns and the environment id of its records in `trajectories.jsonl`. */
const flowOfReasoningRole = 'solver'
const flowOfReasoningEnvironmentId = 'flow-of-reasoning'

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
