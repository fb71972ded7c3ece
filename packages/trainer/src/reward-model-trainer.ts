import * as tf from '@tensorflow/tfjs-core'
import {
  createRandom,
  deriveSeed,
  InvalidArgumentError,
  parseArgument,
  preferencePairSchema,
  tokenizerSchema,
  type PreferencePair,
  type Random,
} from '@ludic/core'
import { CausalLanguageModel, clipGradientsByGlobalNorm, computeGradients, createAdamW, type LearningRateSchedule } from '@ludic/model'
import {
  createRewardModel,
  createRewardModelLoss,
  rewardModelEncodingOptionsSchema,
  rewardModelLossOptionsSchema,
  summarizeResponseLogprobs,
  type EncodedSequence,
  type RewardModel,
  type RewardModelPair,
} from '@ludic/rewards'
import { z } from 'zod'
import { plainConfig } from './loggers/run-loggers.js'
import type { UpdateStepMetrics } from './metrics-log.js'
import { optimizerConfigSchema } from './optimizer-config.js'
import { resolveSchedule, scheduleConfigSchema } from './schedule.js'
import { createDataOrder } from './data-order.js'
import { nodePlatform } from './platform.js'
import { createTrainerSkeleton, runConfigFields, trainerWith, type TrainerControls, type TrainerRunOptions } from './skeleton.js'

export const rewardModelTrainerConfigSchema = z.strictObject({
  model: z.instanceof(CausalLanguageModel, { message: 'must be a CausalLanguageModel (createModel, loadModel)' }),
  tokenizer: tokenizerSchema,
  /** Renders conversations, as `createRewardModel`'s. Default: the tokenizer's template, else plain `role: content` lines. */
  chatTemplate: rewardModelEncodingOptionsSchema.shape.chatTemplate,
  /** Most tokens of prompt + response, as `createRewardModel`'s; longer prompts lose tokens from the left (`truncation`). */
  maxLength: rewardModelEncodingOptionsSchema.shape.maxLength,
  truncation: rewardModelEncodingOptionsSchema.shape.truncation,
  /** The training pairs (parsed records, e.g. `readPreferencePairs`). */
  pairs: z.array(preferencePairSchema).min(1, 'needs at least one pair'),
  /** Held-out pairs for `evaluate()`, or the share of `pairs` set aside (a seeded split). Default: none. */
  heldOut: z.union([z.array(preferencePairSchema).min(1, 'needs at least one pair'), z.strictObject({ validationShare: z.number().gt(0).lt(1) })]).optional(),
  /** Pairs per update. Default 16. */
  batchSize: z.number().int().positive().default(16),
  /** Passes over the training pairs that `run()` takes when not given `steps`. Default 1. */
  epochs: z.number().int().positive().default(1),
  optimizer: optimizerConfigSchema.prefault({}),
  schedule: z.union([scheduleConfigSchema, z.custom<LearningRateSchedule>((value) => typeof value === 'function', 'must be a function')]).optional(),
  /** The loss: margin (`'none'`, `'from-data'`, `'act-adaptive'`), centring, SFT term. Default: plain Bradley–Terry. */
  loss: rewardModelLossOptionsSchema.prefault({}),
  /** Seeds the reward head, the held-out split and the order of pairs. Default 0. */
  seed: z.number().int().default(0),
  /** Evaluate the held-out pairs every this many steps (`eval/accuracy`, `eval/margin` join the step's metrics). 0: only at the end of `run`. Default 0. */
  evaluateEvery: z.number().int().min(0).default(0),
  /** `metrics.jsonl`, checkpoints and, at the end of `run`, the model with its reward head in `model/` go to `runDirectory` (see `runConfigFields`). */
  ...runConfigFields,
})
export type RewardModelTrainerConfig = z.input<typeof rewardModelTrainerConfigSchema>

/** One update's metrics; `loss` is the whole loss (Bradley–Terry with its margin, centring and SFT terms). */
export type RewardModelStepMetrics = UpdateStepMetrics & {
  /** Share of the batch's pairs with r_c > r_r. */
  accuracy: number
  /** mean(r_c − r_r). */
  margin: number
  /** mean of the margin m the loss asked for (0 without one). */
  targetMargin: number
  /** NLL of the chosen responses (with the loss's `sftCoefficient`; else 0). */
  nll: number
}

export interface RewardModelEvaluation {
  pairs: number
  /** Pairwise accuracy: the share of pairs with r_c > r_r, a tie counting 0.5 (a constant model scores 0.5, not 0). */
  accuracy: number
  /** mean(r_c − r_r). */
  margin: number
  /** The Bradley–Terry loss mean(−log σ(r_c − r_r)) (no margin, no penalty). */
  loss: number
}

/** `run`'s options: `steps` is the total to reach (default: `epochs` passes over the training pairs). */
export type RewardModelRunOptions = TrainerRunOptions<RewardModelStepMetrics> & {
  /** Overrides `config.evaluateEvery` for this run. */
  evaluateEvery?: number
}

export interface RewardModelTrainer extends TrainerControls<RewardModelStepMetrics> {
  readonly rewardModel: RewardModel
  /** The encoded training and held-out pairs. */
  readonly trainPairs: readonly RewardModelPair[]
  readonly heldOutPairs: readonly RewardModelPair[]
  /**
   * Updates until `steps` have been taken in total (default: `epochs` passes over the training pairs; a resumed run
   * continues to it), an evaluation every `evaluateEvery` steps when there are held-out pairs (`eval/accuracy`,
   * `eval/margin` in the step's metrics), then the final evaluation and, with a run directory, the model saved.
   */
  run(options?: RewardModelRunOptions): Promise<{ history: RewardModelStepMetrics[]; evaluation: RewardModelEvaluation | undefined }>
  /** Pairwise accuracy and mean margin on `pairs` (default: the held-out pairs). */
  evaluate(pairs?: readonly RewardModelPair[]): Promise<RewardModelEvaluation>
}

/**
 * Trains a Bradley–Terry reward model (TRL `RewardTrainer`): the model with a reward head scores both sides of
 * shuffled mini-batches of preference pairs; the loss is `createRewardModelLoss`'s (margin from the data or ChARM's
 * act-adaptive margin, centring, optional SFT term); gradients are clipped to `maxGradNorm`; AdamW.
 *
 * The act-adaptive `'probability-ratio'` margin takes the model as given to the trainer as π_ref: the summed
 * log-probabilities of every training response are computed once, before the first update.
 */
export function createRewardModelTrainer(config: RewardModelTrainerConfig): RewardModelTrainer {
  const parsed = parseArgument(rewardModelTrainerConfigSchema, config, 'config')
  const { model, tokenizer, chatTemplate, maxLength, truncation, batchSize, epochs, seed, runDirectory } = parsed
  const rewardModel = createRewardModel({
    model,
    tokenizer,
    maxLength,
    truncation,
    batchSize,
    headSeed: seed,
    ...(chatTemplate === undefined ? {} : { chatTemplate }),
  })
  const lossOptions = parsed.loss
  let trainPairs: RewardModelPair[]
  let heldOutPairs: RewardModelPair[]
  try {
    ;({ trainPairs, heldOutPairs } = preparePairs(rewardModel, parsed))
  } catch (error) {
    rewardModel.dispose() // a config that fails leaves the model as it was
    throw error
  }
  const loss = createRewardModelLoss(lossOptions)
  const actAdaptive = lossOptions.margin === 'act-adaptive'
  const usesReference = actAdaptive && lossOptions.actAdaptive.variant === 'probability-ratio'
  // Without an SFT term the loss does not reach an untied output projection: leave it out of the update.
  const parameters = new Map([...model.trainableParameters()].filter(([name]) => lossOptions.sftCoefficient > 0 || name !== 'lm_head.weight'))
  const { maxGradNorm, learningRate, ...adamW } = parsed.optimizer
  const optimizer = createAdamW(parameters, { ...adamW, learningRate })
  const schedule = resolveSchedule(parsed.schedule)
  let random: Random = createRandom(deriveSeed('ludic.reward-model.order', seed))
  let reference: { chosen: Float32Array; rejected: Float32Array } | undefined
  const order = createDataOrder(trainPairs.length, batchSize)
  let evaluateEvery = parsed.evaluateEvery

  /** Summed response log-probabilities of sequences under the model now, in batches. */
  const summedLogprobs = (sequences: readonly EncodedSequence[]): Float32Array => {
    const sums = new Float32Array(sequences.length)
    for (let start = 0; start < sequences.length; start += batchSize) {
      const logprobs = rewardModel.responseLogprobs(sequences.slice(start, start + batchSize))
      sums.set(summarizeResponseLogprobs(logprobs).sums, start)
      tf.dispose([logprobs.logprobs, logprobs.responseMask])
    }
    return sums
  }

  const update = async (stepIndex: number): Promise<RewardModelStepMetrics> => {
    if (usesReference && reference === undefined) {
      reference = { chosen: summedLogprobs(trainPairs.map((pair) => pair.chosen)), rejected: summedLogprobs(trainPairs.map((pair) => pair.rejected)) }
    }
    const batch = order.next(random)
    const pairs = batch.map((index) => trainPairs[index]!)
    const chosen = pairs.map((pair) => pair.chosen)
    const rejected = pairs.map((pair) => pair.rejected)
    let metrics: { loss: number; accuracy: number; margin: number; targetMargin: number; nll: number } | undefined
    const needsLogprobs = actAdaptive || lossOptions.sftCoefficient > 0
    const { loss: lossValue, gradients } = computeGradients(
      () =>
        tf.tidy(() => {
          // One forward pass over both sides: rows 0 … B − 1 chosen, B … 2B − 1 rejected.
          const both = rewardModel.forward([...chosen, ...rejected], { logprobs: needsLogprobs })
          const half = <T extends tf.Tensor>(tensor: T, side: 0 | 1): T => tf.slice(tensor, side * pairs.length, pairs.length) as T
          const result = loss({
            rewardsChosen: half(both.rewards, 0),
            rewardsRejected: half(both.rewards, 1),
            ...(lossOptions.margin === 'from-data' ? { dataMargins: pairs.map((pair) => pair.margin ?? 0) } : {}),
            ...(both.logprobs === undefined
              ? {}
              : {
                  policyChosen: { logprobs: half(both.logprobs.logprobs, 0), responseMask: half(both.logprobs.responseMask, 0) },
                  policyRejected: { logprobs: half(both.logprobs.logprobs, 1), responseMask: half(both.logprobs.responseMask, 1) },
                }),
            ...(reference === undefined
              ? {}
              : { referenceChosen: batch.map((index) => reference!.chosen[index]!), referenceRejected: batch.map((index) => reference!.rejected[index]!) }),
          })
          metrics = result.metrics
          return result.loss
        }),
      parameters,
    )
    const rate = learningRate * schedule(stepIndex)
    const clipped = clipGradientsByGlobalNorm(gradients, maxGradNorm)
    optimizer.step(clipped.gradients, { learningRate: rate })
    tf.dispose([lossValue, ...gradients.values(), ...clipped.gradients.values()])
    const { loss: total, accuracy, margin, targetMargin, nll } = metrics!
    const step: RewardModelStepMetrics = { step: stepIndex + 1, loss: total, accuracy, margin, targetMargin, nll, grad_norm: clipped.norm, learning_rate: rate }
    if (heldOutPairs.length > 0 && evaluateEvery > 0 && step.step % evaluateEvery === 0) {
      const evaluation = await evaluate()
      Object.assign(step, { 'eval/accuracy': evaluation.accuracy, 'eval/margin': evaluation.margin })
    }
    return step
  }

  const evaluate = async (pairs: readonly RewardModelPair[] = heldOutPairs): Promise<RewardModelEvaluation> => {
    if (pairs.length === 0)
      throw new InvalidArgumentError({ argument: 'pairs', value: 0, message: 'no pairs to evaluate (config.heldOut gives held-out pairs)' })
    let wins = 0
    let marginSum = 0
    let lossSum = 0
    for (let start = 0; start < pairs.length; start += batchSize) {
      const slice = pairs.slice(start, start + batchSize)
      const both = rewardModel.rewardsTensor([...slice.map((pair) => pair.chosen), ...slice.map((pair) => pair.rejected)])
      const rewards = both.dataSync()
      both.dispose()
      for (let index = 0; index < slice.length; index++) {
        const difference = rewards[index]! - rewards[slice.length + index]!
        wins += difference > 0 ? 1 : difference === 0 ? 0.5 : 0
        marginSum += difference
        lossSum += difference > 0 ? Math.log1p(Math.exp(-difference)) : -difference + Math.log1p(Math.exp(difference)) // −log σ(d), stable
      }
      await Promise.resolve()
    }
    return { pairs: pairs.length, accuracy: wins / pairs.length, margin: marginSum / pairs.length, loss: lossSum / pairs.length }
  }

  const skeleton = createTrainerSkeleton<RewardModelStepMetrics>({
    name: 'reward-model',
    model,
    optimizer,
    run: parsed,
    plainConfig: () => plainConfig(parsed, ['model', 'tokenizer', 'pairs', 'heldOut', 'chatTemplate', 'loggers', 'loggedConfig']),
    update: async (stepIndex) => ({ metrics: await update(stepIndex) }),
    random: () => random,
    saveState: () => ({
      order: order.getState(),
      ...(reference === undefined ? {} : { reference: { chosen: Array.from(reference.chosen), rejected: Array.from(reference.rejected) } }),
    }),
    restoreState(state, restored) {
      random = restored
      const saved = (state ?? {}) as { order?: number[]; reference?: { chosen: number[]; rejected: number[] } }
      order.setState(saved.order)
      if (saved.reference !== undefined)
        reference = { chosen: Float32Array.from(saved.reference.chosen), rejected: Float32Array.from(saved.reference.rejected) }
    },
    progressFields: (metrics) => ({ loss: metrics.loss, accuracy: metrics.accuracy }),
    dispose() {
      optimizer.dispose()
      rewardModel.dispose()
    },
  })
  const trainer = trainerWith(skeleton, {
    rewardModel,
    optimizer,
    trainPairs,
    heldOutPairs,
    async run({
      steps = epochs * Math.ceil(trainPairs.length / batchSize),
      evaluateEvery: every,
      label = 'reward model',
      ...options
    }: RewardModelRunOptions = {}) {
      if (every !== undefined && (!Number.isInteger(every) || every < 0)) {
        throw new InvalidArgumentError({
          argument: 'options.evaluateEvery',
          value: every,
          message: 'must be a non-negative integer (0: only at the end)',
        })
      }
      evaluateEvery = every ?? parsed.evaluateEvery
      const history = await skeleton.run({ ...options, steps, label })
      const evaluation = heldOutPairs.length > 0 ? await evaluate() : undefined
      if (runDirectory !== undefined) await nodePlatform('config.runDirectory', runDirectory).saveRunModel(model, runDirectory)
      return { history, evaluation }
    },
    evaluate,
  })
  return trainer
}

/** Encodes the training and held-out pairs (errors name `config.pairs[i]`), split off the seeded held-out share, checks the margins. */
function preparePairs(
  rewardModel: RewardModel,
  parsed: z.output<typeof rewardModelTrainerConfigSchema>,
): { trainPairs: RewardModelPair[]; heldOutPairs: RewardModelPair[] } {
  const encode = (pairs: readonly PreferencePair[], argument: string) =>
    pairs.map((pair, index) => rewardModel.encodePreferencePair(pair, `${argument}[${index}]`))
  let trainPairs = encode(parsed.pairs, 'config.pairs')
  let heldOutPairs: RewardModelPair[] = []
  if (Array.isArray(parsed.heldOut)) heldOutPairs = encode(parsed.heldOut, 'config.heldOut')
  else if (parsed.heldOut !== undefined) {
    const { validationShare } = parsed.heldOut
    const count = Math.round(validationShare * trainPairs.length)
    if (count < 1 || count >= trainPairs.length) {
      throw new InvalidArgumentError({
        argument: 'config.heldOut.validationShare',
        value: validationShare,
        message: `sets aside ${count} of ${trainPairs.length} pairs; both sides need at least one`,
      })
    }
    const order = createRandom(deriveSeed('ludic.reward-model.split', parsed.seed)).shuffle(Array.from({ length: trainPairs.length }, (_, index) => index))
    const heldOut = new Set(order.slice(0, count))
    heldOutPairs = trainPairs.filter((_, index) => heldOut.has(index))
    trainPairs = trainPairs.filter((_, index) => !heldOut.has(index))
  }
  if (parsed.loss.margin === 'from-data') {
    const missing = trainPairs.findIndex((pair) => pair.margin === undefined)
    if (missing !== -1)
      throw new InvalidArgumentError({
        argument: 'config.loss.margin',
        value: 'from-data',
        message: `needs every pair's margin (training pair ${missing} has none)`,
      })
  }
  return { trainPairs, heldOutPairs }
}
