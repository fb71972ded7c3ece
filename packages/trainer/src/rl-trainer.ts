import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import {
  createRandom,
  deriveSeed,
  InvalidArgumentError,
  LudicError,
  parseArgument,
  type AdvantageEstimatorV1,
  type ChatMessage,
  type EnvironmentV1,
  type PolicyV1,
  type Random,
  type Sample,
  type TokenizerV1,
  type Trajectory,
} from '@ludic/core'
import { createRae } from '@ludic/advantages'
import {
  CausalLanguageModel,
  clipGradientsByGlobalNorm,
  computeGradients,
  createAdamW,
  createLocalPolicy,
  latestCheckpoint,
  loadTrainingCheckpoint,
  saveTrainingCheckpoint,
  sequenceLogprobs,
  type AdamW,
  type LearningRateSchedule,
} from '@ludic/model'
import { createPolicyLoss, klEstimatorSchema, klLoss, type PolicyLoss } from '@ludic/objectives'
import { builtModulePath, collect, createAsyncCollector, type AsyncCollector, type PromptTemplate } from '@ludic/rollout'
import { maskedMean } from '@ludic/tensors'
import { z } from 'zod'
import { createMetricsLog, type MetricsLog, type StepMetrics } from './metrics-log.js'
import { optimizerConfigSchema } from './optimizer-config.js'
import { outcomeAdvantageBatch } from './outcome-rewards.js'
import { createProgressBar, type ProgressBar, type ProgressStream } from './progress-bar.js'
import { resolveSchedule, scheduleConfigSchema } from './schedule.js'
import { padRows, responseColumns, responseLogprobs, type TokenSequence } from './sequences.js'
import { shuffled } from './sft-trainer.js'
import { weightsPayload, type ModelRolloutWorkerData, type RolloutAnnotation } from './rollout-worker.js'

const isPolicyLike = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && (value as PolicyV1).specificationVersion === 'v1' && typeof (value as PolicyV1).id === 'string' && typeof (value as PolicyV1).generate === 'function'

const functionOf = <T>(message: string) => z.custom<T>((value) => typeof value === 'function', message)

/** How much experience a step collects and how it is replayed. */
export const rlBatchConfigSchema = z.strictObject({
  /** Reset seeds per step (each environment plays each `groupSize` times). Default 32. */
  episodesPerStep: z.number().int().positive().default(32),
  /** Episodes per (environment, seed): a group for group-relative estimators. Default 1. */
  groupSize: z.number().int().positive().default(1),
  /** Passes over the step's samples (PPO epochs). Default 2. */
  ppoEpochs: z.number().int().positive().default(2),
  /** Samples (turns) per gradient update. Default 64. */
  miniBatchSize: z.number().int().positive().default(64),
  /** Most tokens per response. Default 16. */
  maxTokens: z.number().int().positive().default(16),
  /** Sampling temperature of the rollout. Default 1 (the log-probs the ratio needs are temperature-1 ones). */
  temperature: z.number().positive().default(1),
  /** Episodes in flight; their requests are batched. Default 64. */
  concurrency: z.number().int().positive().default(64),
  /** Requests per `generate` batch. Default 64. */
  maxGenerationBatch: z.number().int().positive().default(64),
  /** Episodes still going after this many turns are truncated. Default 64. */
  maxTurns: z.number().int().positive().default(64),
})
export type RlBatchConfig = z.input<typeof rlBatchConfigSchema>

/**
 * Asynchronous collection (RollArc, LlamaRL): rollout workers in `worker_threads`, each with its own backend and
 * a copy of the model, play the next batches while the trainer updates on the current one. The trainer pushes
 * its weights every `pushEvery` steps; a batch played with weights more than `maxStaleness` steps old is not
 * used. The PPO ratio is taken against the current weights' log-probs (recomputed, "proximal") and each token's
 * loss is weighted by the truncated importance ratio min(π_current / π_rollout, `importanceCap`) (decoupled PPO,
 * AReaL; verl's `rollout_is` "token" truncation), which corrects for the stale weights that generated it.
 */
export const asyncRolloutConfigSchema = z.strictObject({
  /**
   * Absolute path or URL of a module exporting `createRolloutSetup(data)` (or a default function) that returns
   * `{ environments, tokenizer, prompt?, chatTemplate? }`: what every worker plays, with the same tokenizer and
   * prompts as the trainer. A TypeScript module is loaded through tsx.
   */
  setupModule: z.union([z.string().min(1), z.instanceof(URL)]),
  /** Given to `createRolloutSetup` (structured-cloned: plain data). */
  setupData: z.unknown().optional(),
  /** Worker threads. Default 1 (on 2 cores: one generates while the main thread trains). */
  workers: z.number().int().min(1).default(1),
  /** Push the weights to the workers every k steps. Default 1. */
  pushEvery: z.number().int().min(1).default(1),
  /** A batch is used only if its weights are at most this many steps old; ≥ pushEvery. Default 1. */
  maxStaleness: z.number().int().min(1).default(1),
  /** Finished batches kept waiting beyond one per worker. Default 0. */
  prefetch: z.number().int().min(0).default(0),
  /** Truncation of the per-token importance ratio π_current / π_rollout. Default 2. */
  importanceCap: z.number().min(1).default(2),
  /** The workers' backend. Default: the trainer's (`tf.getBackend()`). */
  backend: z.string().min(1).optional(),
  /** Node options of the worker threads. Default: the process's. */
  execArgv: z.array(z.string()).optional(),
})
export type AsyncRolloutConfig = z.input<typeof asyncRolloutConfigSchema>

export const klConfigSchema = z.strictObject({
  /** β: the loss gets + β·KL(π_θ ‖ π_ref). */
  coefficient: z.number().positive(),
  /** verl `kl_loss_type`. Default `low_var_kl` (k3). */
  estimator: klEstimatorSchema.default('low_var_kl'),
})

/** What `evaluate` sees. */
export interface EvaluationContext {
  /** Updates taken so far (0 before training). */
  step: number
  model: CausalLanguageModel
  tokenizer: TokenizerV1
}
export type EvaluationHook = (context: EvaluationContext) => Promise<Readonly<Record<string, number>>> | Readonly<Record<string, number>>

export const rlTrainerConfigSchema = z.strictObject({
  model: z.instanceof(CausalLanguageModel, { message: 'must be a CausalLanguageModel (createModel, loadModel)' }),
  tokenizer: z.custom<TokenizerV1>(
    (value) => typeof value === 'object' && value !== null && typeof (value as TokenizerV1).encode === 'function' && typeof (value as TokenizerV1).decode === 'function',
    'must be a TokenizerV1',
  ),
  /**
   * Environment factories (several games train together); the policy plays every role (self-play). Not used
   * with `asyncRollout`, whose setup module gives the workers theirs.
   */
  environments: z.array(functionOf<() => EnvironmentV1>('must be a function that creates an environment')).min(1, 'needs at least one environment').optional(),
  /** Any `AdvantageEstimatorV1`. Default: RAE (role-conditioned baselines, SPIRAL). */
  advantage: z
    .custom<AdvantageEstimatorV1>((value) => typeof value === 'object' && value !== null && typeof (value as AdvantageEstimatorV1).estimate === 'function', 'must be an AdvantageEstimatorV1')
    .optional(),
  /** A policy loss from `createPolicyLoss`. Default: PPO clip (ε 0.2, token mean). */
  policyLoss: functionOf<PolicyLoss>('must be a policy loss function (createPolicyLoss)').optional(),
  /** KL to a frozen copy of the starting weights, as a loss term. Default: none. */
  kl: klConfigSchema.optional(),
  /** The loss gets − c·entropy (token mean). Default 0. */
  entropyCoefficient: z.number().min(0).default(0),
  /**
   * Response positions whose token is one of these ids get no entropy bonus (e.g. format tokens and the end
   * token, whose spread only makes moves invalid); the entropy is then the mean over the other positions.
   * Default: none excluded (every response token).
   */
  entropyExcludeTokenIds: z.array(z.number().int().min(0)).optional(),
  optimizer: optimizerConfigSchema.prefault({}),
  /** Learning-rate multiplier per trainer step. Default: constant. */
  schedule: z.union([scheduleConfigSchema, functionOf<LearningRateSchedule>('must be a function')]).optional(),
  batch: rlBatchConfigSchema.prefault({}),
  /** The prompt of a turn (rollout's: a `{observation}` template or a function). Default `'{observation}'`. */
  prompt: z.union([z.string(), functionOf<PromptTemplate>('must be a string or a function')]).optional(),
  /** How messages become the prompt text (createLocalPolicy's). Default: the tokenizer's chat template. */
  chatTemplate: z.union([z.string().min(1), functionOf<(messages: readonly ChatMessage[]) => string>('must be a function')]).optional(),
  /**
   * Recompute the old log-probs with a full forward pass of the rollout weights before the update
   * (verl's `old_log_prob`). The rollout's own log-probs come from the KV-cached decode, equal to ~1e-6;
   * recomputing makes the first ratio exactly 1 at the cost of one forward pass. Default true.
   */
  recomputeOldLogprobs: z.boolean().default(true),
  /** Seeds episodes, sampling and mini-batch order. Default 0. */
  seed: z.number().int().default(0),
  /** Where `metrics.jsonl` and `checkpoint-<step>/` go. Default: none (nothing written). */
  runDirectory: z.string().min(1).optional(),
  /** Save a checkpoint every k steps (and after the last step of `run`). 0: never. Default 0. */
  checkpointEvery: z.number().int().min(0).default(0),
  /** Checkpoints kept. Default 2. */
  keepLast: z.number().int().positive().default(2),
  /** Continue from the latest checkpoint in `runDirectory`, if any, on the first `step`/`run`. Default false. */
  resume: z.boolean().default(false),
  /** Called every `evaluateEvery` steps; its numbers are logged as `eval/<name>`. */
  evaluate: functionOf<EvaluationHook>('must be a function (context) => metrics').optional(),
  evaluateEvery: z.number().int().min(0).default(0),
  /** Only these roles' turns are trained on. Default: every role. */
  trainRoles: z.array(z.string()).min(1).optional(),
  /**
   * Fixed opponents beside self-play (a population, as in league training): in a `share` of the episodes (drawn
   * per episode from the seed and step) one role, drawn likewise, is played by `policy` (e.g. the random player),
   * and only the model's turns are trained on. Shares add up to at most 1. Default: none (pure self-play).
   */
  opponents: z
    .array(z.strictObject({ policy: z.custom<PolicyV1>(isPolicyLike, 'must be a PolicyV1'), share: z.number().gt(0).max(1) }))
    .min(1)
    .refine((opponents) => opponents.reduce((total, opponent) => total + opponent.share, 0) <= 1 + 1e-9, 'shares must add up to at most 1')
    .optional(),
  /** Collect in worker threads while training (see `asyncRolloutConfigSchema`). Default: synchronous collection. */
  asyncRollout: asyncRolloutConfigSchema.optional(),
})
export type RlTrainerConfig = z.input<typeof rlTrainerConfigSchema>

export interface RlRunOptions {
  /** Run until this many steps have been taken in total (a resumed run continues to it). */
  steps: number
  onStep?: (metrics: StepMetrics) => void | Promise<void>
  /** A progress bar on stderr (`true`) or on a stream. Default false. */
  progress?: boolean | ProgressStream
  /** Stops after the current step (which is checkpointed when `runDirectory` is set). */
  signal?: AbortSignal
}

export interface RlTrainer {
  readonly optimizer: AdamW
  /** Steps taken so far. */
  readonly stepCount: number
  /** Metrics of every step so far (restored on resume). */
  readonly history: readonly StepMetrics[]
  /** One step: collect → rewards → advantages → PPO epochs → metrics (→ evaluation, log, checkpoint). */
  step(): Promise<StepMetrics>
  run(options: RlRunOptions): Promise<StepMetrics[]>
  /** Loads the latest checkpoint of `runDirectory`; returns its step (undefined when there is none). */
  resume(): Promise<number | undefined>
  /** Saves a checkpoint of the current state now. */
  checkpoint(): Promise<string>
  /** Runs the evaluation hook now; returns its metrics (prefixed `eval/`). */
  evaluate(): Promise<Record<string, number>>
  /** Stops the rollout workers of asynchronous collection, if running (`run` stops them when it ends). */
  close(): Promise<void>
  /** Frees the optimizer's moments and the reference model (the model stays); stops rollout workers. */
  dispose(): void
}

interface EstimatorWithState extends AdvantageEstimatorV1 {
  getState(): unknown
  setState(state: unknown): void
}
const hasState = (estimator: AdvantageEstimatorV1): estimator is EstimatorWithState =>
  typeof (estimator as Partial<EstimatorWithState>).getState === 'function' && typeof (estimator as Partial<EstimatorWithState>).setState === 'function'

/**
 * Self-play RL (SPIRAL): one policy plays every role of every environment; each role's outcome reward
 * goes through the advantage estimator (RAE by default) and PPO updates the model on the step's samples.
 * Checkpoints hold the weights, the optimizer, the generator, the estimator's state, the step and the
 * metrics, so a resumed run continues exactly (bit for bit) where it stopped.
 */
export function createRlTrainer(config: RlTrainerConfig): RlTrainer {
  const parsed = parseArgument(rlTrainerConfigSchema, config, 'config')
  const { model, tokenizer, batch, entropyCoefficient, kl, seed, runDirectory } = parsed
  const entropyExcluded = new Set(parsed.entropyExcludeTokenIds ?? [])
  if (parsed.checkpointEvery > 0 && runDirectory === undefined) {
    throw new InvalidArgumentError({ argument: 'config.runDirectory', value: undefined, message: 'is needed with config.checkpointEvery > 0' })
  }
  if (parsed.resume && runDirectory === undefined) {
    throw new InvalidArgumentError({ argument: 'config.runDirectory', value: undefined, message: 'is needed with config.resume' })
  }
  const asyncRollout = parsed.asyncRollout
  if (asyncRollout === undefined && parsed.environments === undefined) {
    throw new InvalidArgumentError({ argument: 'config.environments', value: undefined, message: 'is needed (or config.asyncRollout, whose setup module gives the environments)' })
  }
  if (asyncRollout !== undefined) {
    for (const name of ['environments', 'prompt', 'chatTemplate', 'opponents'] as const) {
      if (parsed[name] !== undefined) {
        throw new InvalidArgumentError({ argument: `config.${name}`, value: parsed[name], message: name === 'opponents' ? 'are not supported with config.asyncRollout yet (the workers play self-play only)' : 'must not be given with config.asyncRollout: its setup module gives the workers their environments, prompt and chat template' })
      }
    }
    if (asyncRollout.maxStaleness < asyncRollout.pushEvery) {
      throw new InvalidArgumentError({ argument: 'config.asyncRollout.maxStaleness', value: asyncRollout.maxStaleness, message: `must be at least config.asyncRollout.pushEvery (${asyncRollout.pushEvery}): weights pushed every k steps are up to k steps old` })
    }
    if (!parsed.recomputeOldLogprobs) {
      throw new InvalidArgumentError({ argument: 'config.recomputeOldLogprobs', value: false, message: 'must be true with config.asyncRollout: the importance ratio needs the current weights\' log-probs' })
    }
  }
  parsed.opponents?.forEach((opponent, index) => {
    if (opponent.policy.id === `local-${model.config.architecture}`) {
      throw new InvalidArgumentError({ argument: `config.opponents.${index}.policy.id`, value: opponent.policy.id, message: "is the trained model's policy id; an opponent needs its own (its turns are told apart by id)" })
    }
  })
  let collector: AsyncCollector | undefined
  const estimator = parsed.advantage ?? createRae()
  const policyLoss = parsed.policyLoss ?? createPolicyLoss('ppo-clip')
  const schedule = resolveSchedule(parsed.schedule)
  const { maxGradNorm, learningRate, ...adamW } = parsed.optimizer
  const parameters = model.trainableParameters()
  const optimizer = createAdamW(parameters, { ...adamW, learningRate })
  // The reference policy for the KL term: a frozen copy of the starting weights.
  const reference = kl === undefined ? undefined : new CausalLanguageModel(model.config, model.parameters())
  const log: MetricsLog | undefined = runDirectory === undefined ? undefined : createMetricsLog(join(runDirectory, 'metrics.jsonl'))
  let random: Random = createRandom(deriveSeed('ludic.trainer', seed))
  let stepCount = 0
  let history: StepMetrics[] = []
  let resumeChecked = !parsed.resume

  async function resume(): Promise<number | undefined> {
    resumeChecked = true
    if (runDirectory === undefined) throw new InvalidArgumentError({ argument: 'config.runDirectory', value: undefined, message: 'is needed to resume' })
    const path = await latestCheckpoint(runDirectory)
    if (path === undefined) return undefined
    const loaded = await loadTrainingCheckpoint(path, { parameters: model.parameters(), optimizer })
    const extra = (loaded.extra ?? {}) as { estimatorState?: unknown; history?: StepMetrics[]; reference?: string }
    if (extra.estimatorState !== undefined && hasState(estimator)) estimator.setState(extra.estimatorState)
    if (reference !== undefined) {
      const referenceCheckpoint = await latestCheckpoint(join(runDirectory, 'reference'))
      if (referenceCheckpoint !== undefined) await loadTrainingCheckpoint(referenceCheckpoint, { parameters: reference.parameters() })
    }
    random = loaded.random
    stepCount = loaded.step
    history = extra.history ?? []
    await log?.truncateAfter(stepCount)
    return stepCount
  }

  async function checkpoint(): Promise<string> {
    if (runDirectory === undefined) throw new InvalidArgumentError({ argument: 'config.runDirectory', value: undefined, message: 'is needed to save checkpoints' })
    if (reference !== undefined && (await latestCheckpoint(join(runDirectory, 'reference'))) === undefined) {
      await saveTrainingCheckpoint(join(runDirectory, 'reference'), { parameters: reference.parameters(), randomState: random.getState(), step: 0 })
    }
    const extra = { estimatorState: hasState(estimator) ? (estimator.getState() as never) : null, history: history as never }
    await saveTrainingCheckpoint(runDirectory, { parameters: model.parameters(), optimizer, randomState: random.getState(), step: stepCount, extra }, { keepLast: parsed.keepLast })
    return join(runDirectory, `checkpoint-${stepCount}`)
  }

  async function evaluate(): Promise<Record<string, number>> {
    if (parsed.evaluate === undefined) return {}
    const results = await parsed.evaluate({ step: stepCount, model, tokenizer })
    return Object.fromEntries(Object.entries(results).map(([name, value]) => [`eval/${name}`, value]))
  }

  async function step(): Promise<StepMetrics> {
    if (!resumeChecked) await resume()
    const stepIndex = stepCount
    const started = performance.now()

    // 1. Collect: self-play, the same policy in every role; seeds depend only on (seed, step).
    const rollout = asyncRollout === undefined ? await collectNow(stepIndex) : await collectAsync(stepIndex)
    if (rollout.failures.length > 0) throw rollout.failures[0]!.error
    const samples = rollout.samples.filter((sample) => sample.responseTokenIds.length > 0)
    const rolloutSeconds = (performance.now() - started) / 1000
    if (samples.length === 0) throw new InvalidArgumentError({ argument: 'config.environments', value: rollout.trajectories.length, message: 'gave no samples to train on' })

    // 2. Rewards: each role's episode return on its last response token. 3. Advantages.
    const advantageBatch = outcomeAdvantageBatch(rollout.trajectories, samples)
    const { advantages } = estimator.estimate(advantageBatch)

    // 4. PPO epochs over shuffled mini-batches.
    const updateStarted = performance.now()
    const sequences: TokenSequence[] = samples.map((sample) => ({ promptIds: sample.promptTokenIds, responseIds: sample.responseTokenIds }))
    const oldLogprobs = parsed.recomputeOldLogprobs ? await responseLogprobs(model, sequences, batch.miniBatchSize) : samples.map((sample) => sample.rolloutLogprobs)
    // Asynchronous collection: the rollout weights may be older than these; weight each token by the truncated ratio.
    const importance = asyncRollout === undefined ? undefined : importanceWeights(oldLogprobs, samples, asyncRollout.importanceCap)
    // The rollout worker computed the reference log-probs (asynchronous mode); otherwise a forward pass here.
    const referenceLogprobs = reference === undefined ? undefined : (workerReferenceLogprobs(rollout, samples) ?? (await responseLogprobs(reference, sequences, batch.miniBatchSize)))
    const rate = learningRate * schedule(stepIndex)
    const sums: Record<string, number> = {}
    let updates = 0
    for (let epoch = 0; epoch < batch.ppoEpochs; epoch++) {
      const order = shuffled(samples.length, random)
      for (let start = 0; start < order.length; start += batch.miniBatchSize) {
        const indices = order.slice(start, start + batch.miniBatchSize)
        const pick = <T>(values: readonly T[]) => indices.map((index) => values[index]!)
        const terms = ppoUpdate(pick(sequences), pick(oldLogprobs), pick(advantages), referenceLogprobs && pick(referenceLogprobs), importance && pick(importance.weights), rate)
        for (const [name, value] of Object.entries(terms)) sums[name] = (sums[name] ?? 0) + value
        updates++
      }
    }
    const updateSeconds = (performance.now() - updateStarted) / 1000
    stepCount++
    if (collector !== undefined && stepCount % asyncRollout!.pushEvery === 0) collector.pushWeights(stepCount, weightsPayload(model.parameters()))

    // 5. Metrics.
    const metrics: StepMetrics = {
      step: stepCount,
      ...rolloutMetrics(rollout.trajectories, samples),
      ...Object.fromEntries(Object.entries(sums).map(([name, total]) => [name, total / updates])),
      learningRate: rate,
      tokensPerSecond: samples.reduce((total, sample) => total + sample.responseTokenIds.length, 0) / Math.max(rollout.generationSeconds ?? rolloutSeconds, 1e-9),
      rolloutSeconds,
      updateSeconds,
      ...(importance === undefined ? {} : asyncMetrics(rollout as AsyncRollout, stepIndex, importance)),
    }
    if (parsed.evaluate !== undefined && parsed.evaluateEvery > 0 && stepCount % parsed.evaluateEvery === 0) Object.assign(metrics, await evaluate())
    history.push(metrics)
    await log?.append(metrics)
    if (parsed.checkpointEvery > 0 && stepCount % parsed.checkpointEvery === 0) await checkpoint()
    return metrics
  }

  async function collectNow(stepIndex: number): Promise<CollectedRollout> {
    const policy = createLocalPolicy({ model, tokenizer, maxBatch: batch.maxGenerationBatch, seed: deriveSeed('ludic.policy', seed, stepIndex), ...(parsed.chatTemplate === undefined ? {} : { chatTemplate: parsed.chatTemplate }) })
    const firstSeed = deriveSeed('ludic.episodes', seed, stepIndex) % 2 ** 30
    const rollout = await collect({
      environments: parsed.environments!,
      policies: parsed.opponents === undefined ? policy : withOpponents(policy, parsed.opponents, seed, stepIndex),
      ...(parsed.opponents === undefined ? {} : { learnerPolicyIds: [policy.id] }),
      seeds: Array.from({ length: batch.episodesPerStep }, (_, index) => firstSeed + index),
      groupSize: batch.groupSize,
      concurrency: batch.concurrency,
      maxTurns: batch.maxTurns,
      maxBatchSize: batch.maxGenerationBatch,
      ...(parsed.prompt === undefined ? {} : { prompt: parsed.prompt }),
      generation: { maxTokens: batch.maxTokens, temperature: batch.temperature },
      samplingSeed: deriveSeed('ludic.sampling', seed, stepIndex),
      runId: `step-${stepIndex}`,
      ...(parsed.trainRoles === undefined ? {} : { trainRoles: parsed.trainRoles }),
    })
    return rollout
  }

  async function collectAsync(stepIndex: number): Promise<AsyncRollout> {
    const settings = asyncRollout!
    if (collector === undefined) {
      const data: ModelRolloutWorkerData = {
        setupModule: settings.setupModule instanceof URL ? settings.setupModule.href : settings.setupModule,
        setupData: settings.setupData,
        modelConfig: model.config,
        weights: weightsPayload(model.parameters()),
        backend: settings.backend ?? tf.getBackend(),
        maxBatch: batch.maxGenerationBatch,
        seed: deriveSeed('ludic.policy', seed),
        vocabSize: tokenizer.vocabSize,
        ...(reference === undefined ? {} : { reference: weightsPayload(reference.parameters()) }),
        chunkSize: batch.miniBatchSize,
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
        ...(parsed.trainRoles === undefined ? {} : { trainRoles: parsed.trainRoles }),
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
      collector = started
    }
    const received = await collector.next(stepIndex)
    return { ...received, generationSeconds: received.seconds, dropped: collector.stats.batchesDropped, annotation: received.annotation as RolloutAnnotation | undefined }
  }

  async function close(): Promise<void> {
    const running = collector
    collector = undefined
    await running?.close()
  }

  /** One PPO update on a mini-batch: the loss terms under their papers' names, every one returned. */
  function ppoUpdate(
    sequences: TokenSequence[],
    oldLogprobs: Float32Array[],
    advantages: Float32Array[],
    referenceLogprobs: Float32Array[] | undefined,
    importance: Float32Array[] | undefined,
    rate: number,
  ): Record<string, number> {
    const rows = sequences.length
    const columns = responseColumns(sequences)
    const terms: Record<string, number> = {}
    const { loss, gradients } = computeGradients(
      () =>
        tf.tidy(() => {
          const { logprobs, entropies, responseMask } = sequenceLogprobs(model, { promptIds: sequences.map((s) => s.promptIds), responseIds: sequences.map((s) => s.responseIds) }, { withEntropy: true }) // [rows, columns]
          const pg = policyLoss({
            logprobs,
            oldLogprobs: tf.tensor2d(padRows(oldLogprobs, columns), [rows, columns]),
            advantages: tf.tensor2d(padRows(advantages, columns), [rows, columns]),
            mask: responseMask,
            ...(importance === undefined ? {} : { importanceWeights: tf.tensor2d(padRows(importance, columns), [rows, columns]) }),
          })
          const entropyMask = entropyExcluded.size === 0 ? responseMask : tf.mul(tf.cast(responseMask, 'float32'), tf.tensor2d(entropyKeep(sequences, columns, entropyExcluded), [rows, columns]))
          const entropy = maskedMean(entropies!, entropyMask) as tf.Scalar
          let total: tf.Scalar = entropyCoefficient > 0 ? tf.sub(pg.loss, tf.mul(entropyCoefficient, entropy)) : pg.loss
          if (kl !== undefined && referenceLogprobs !== undefined) {
            const klTerm = klLoss({ logprobs, referenceLogprobs: tf.tensor2d(padRows(referenceLogprobs, columns), [rows, columns]), mask: responseMask }, { estimator: kl.estimator })
            terms.kl = klTerm.metrics.klLoss
            total = tf.add(total, tf.mul(kl.coefficient, klTerm.loss))
          }
          terms.pgLoss = pg.metrics.pgLoss
          terms.entropy = entropy.dataSync()[0]!
          terms.approxKl = pg.metrics.approxKl
          terms.clipFraction = pg.metrics.clipFraction
          terms.ratioMax = pg.metrics.ratioMax
          return total
        }),
      parameters,
    )
    const clipped = clipGradientsByGlobalNorm(gradients, maxGradNorm)
    optimizer.step(clipped.gradients, { learningRate: rate })
    terms.loss = loss.dataSync()[0]!
    terms.gradNorm = clipped.norm
    tf.dispose([loss, ...gradients.values(), ...clipped.gradients.values()])
    return terms
  }

  return {
    optimizer,
    get stepCount() {
      return stepCount
    },
    get history() {
      return history
    },
    step,
    async run({ steps, onStep, progress = false, signal }) {
      if (!Number.isInteger(steps) || steps < 0) throw new InvalidArgumentError({ argument: 'options.steps', value: steps, message: 'must be a non-negative integer' })
      if (!resumeChecked) await resume()
      if (runDirectory !== undefined) await mkdir(runDirectory, { recursive: true })
      const bar: ProgressBar | undefined = progress === false ? undefined : createProgressBar(steps, { label: 'self-play', ...(progress === true ? {} : { stream: progress }) })
      bar?.update(stepCount)
      const taken: StepMetrics[] = []
      while (stepCount < steps && signal?.aborted !== true) {
        const metrics = await step()
        taken.push(metrics)
        bar?.update(stepCount, progressFields(metrics))
        await onStep?.(metrics)
      }
      bar?.finish()
      await close()
      const last = history.at(-1)
      if (parsed.checkpointEvery > 0 && last !== undefined && last.step === stepCount && stepCount % parsed.checkpointEvery !== 0) await checkpoint()
      return taken
    },
    resume,
    checkpoint,
    evaluate,
    close,
    dispose() {
      void close()
      optimizer.dispose()
      reference?.dispose()
    },
  }
}

/**
 * Self-play with fixed opponents in a share of the episodes: per episode a draw (from seed, step and episode)
 * picks an opponent or none, and which role it plays; every other role is the model's.
 */
function withOpponents(self: PolicyV1, opponents: readonly { policy: PolicyV1; share: number }[], seed: number, stepIndex: number) {
  return ({ role, roles, episodeIndex }: { role: string; roles: readonly string[]; episodeIndex: number }): PolicyV1 => {
    const draw = createRandom(deriveSeed('ludic.opponents', seed, stepIndex, episodeIndex))
    let u = draw.nextFloat()
    const seat = roles[draw.nextInt(roles.length)]
    for (const opponent of opponents) {
      if (u < opponent.share) return role === seat ? opponent.policy : self
      u -= opponent.share
    }
    return self
  }
}

interface CollectedRollout {
  trajectories: Trajectory[]
  samples: Sample[]
  failures: { error: unknown }[]
  /** Seconds the rollout took to generate (the worker's time in asynchronous mode). */
  generationSeconds?: number
}

interface AsyncRollout extends CollectedRollout {
  policyVersion: number
  dropped: number
  annotation?: RolloutAnnotation | undefined
}

/** The worker's reference log-probs of these samples, when it sent them (checked against the response lengths). */
function workerReferenceLogprobs(rollout: CollectedRollout | AsyncRollout, samples: readonly Sample[]): Float32Array[] | undefined {
  const logprobs = 'annotation' in rollout ? rollout.annotation?.referenceLogprobs : undefined
  if (logprobs === undefined) return undefined
  if (logprobs.length !== samples.length || logprobs.some((row, index) => row.length !== samples[index]!.responseTokenIds.length)) {
    throw new LudicError(`the rollout worker's reference log-probs do not match the batch (${logprobs.length} rows for ${samples.length} samples)`)
  }
  return logprobs
}

/** Per token, min(exp(current − rollout log-prob), cap): the truncated importance ratio of stale rollout weights. */
export function importanceWeights(currentLogprobs: readonly Float32Array[], samples: readonly Sample[], cap: number): { weights: Float32Array[]; mean: number; truncated: number } {
  let total = 0
  let truncated = 0
  let count = 0
  const weights = samples.map((sample, row) => {
    const current = currentLogprobs[row]!
    return Float32Array.from(sample.rolloutLogprobs, (rolloutLogprob, column) => {
      const ratio = Math.exp(current[column]! - rolloutLogprob)
      const weight = Number.isFinite(ratio) ? Math.min(ratio, cap) : cap
      if (ratio > cap || !Number.isFinite(ratio)) truncated++
      total += weight
      count++
      return weight
    })
  })
  return { weights, mean: count === 0 ? 1 : total / count, truncated: count === 0 ? 0 : truncated / count }
}

function asyncMetrics(rollout: AsyncRollout, stepIndex: number, importance: { mean: number; truncated: number }): Record<string, number> {
  return {
    staleness: stepIndex - rollout.policyVersion,
    importanceWeightMean: importance.mean,
    importanceTruncatedFraction: importance.truncated,
    batchesDropped: rollout.dropped,
  }
}

/** 1 where a response token counts toward the entropy bonus, 0 where its id is excluded (row-major, padded). */
export function entropyKeep(sequences: readonly TokenSequence[], columns: number, excluded: ReadonlySet<number>): Float32Array {
  const keep = new Float32Array(sequences.length * columns)
  sequences.forEach((sequence, row) => {
    for (let column = 0; column < Math.min(columns, sequence.responseIds.length); column++) keep[row * columns + column] = excluded.has(sequence.responseIds[column]!) ? 0 : 1
  })
  return keep
}

/** Rewards and win rates per environment and role, invalid-action rate, response length. */
function rolloutMetrics(trajectories: readonly Trajectory[], samples: readonly Sample[]): Record<string, number> {
  const metrics: Record<string, number> = {}
  const byEnvironment = new Map<string, Trajectory[]>()
  for (const trajectory of trajectories) byEnvironment.set(trajectory.environmentId, [...(byEnvironment.get(trajectory.environmentId) ?? []), trajectory])
  for (const [environmentId, group] of byEnvironment) {
    for (const role of group[0]!.roles) {
      metrics[`reward/${environmentId}/${role}`] = mean(group.map((trajectory) => trajectory.returns[role] ?? 0))
      metrics[`winRate/${environmentId}/${role}`] = mean(group.map((trajectory) => ((trajectory.returns[role] ?? 0) > Math.max(...trajectory.roles.filter((other) => other !== role).map((other) => trajectory.returns[other] ?? 0)) ? 1 : 0)))
    }
  }
  metrics.episodes = trajectories.length
  metrics.truncatedRate = mean(trajectories.map((trajectory) => (trajectory.truncated ? 1 : 0)))
  metrics.samples = samples.length
  metrics.invalidRate = mean(samples.map((sample) => (sample.invalid ? 1 : 0)))
  metrics.responseLength = mean(samples.map((sample) => sample.responseTokenIds.length))
  return metrics
}

function progressFields(metrics: StepMetrics): Record<string, number> {
  const fields: Record<string, number> = {}
  for (const [name, value] of Object.entries(metrics)) {
    if (name.startsWith('reward/') || name.startsWith('eval/') || ['invalidRate', 'entropy', 'clipFraction', 'tokensPerSecond'].includes(name)) {
      fields[name.replace(/^reward\/[^/]+\//, 'reward.').replace(/^eval\//, 'eval.')] = value
    }
  }
  return fields
}

const mean = (values: readonly number[]): number => (values.length === 0 ? 0 : values.reduce((total, value) => total + value, 0) / values.length)
