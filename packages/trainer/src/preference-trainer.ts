import * as tf from '@tensorflow/tfjs-core'
import {
  createRandom,
  deriveSeed,
  InvalidArgumentError,
  parseArgument,
  preferencePairSchema,
  tokenizerSchema,
  type ChatTemplateFunction,
  type PreferencePair,
  type Random,
} from '@ludic/core'
import {
  CausalLanguageModel,
  checkVocabularyFits,
  clipGradientsByGlobalNorm,
  computeGradients,
  createAdamW,
  sequenceLogprobs,
  type LearningRateSchedule,
} from '@ludic/model'
import {
  createKtoLoss,
  createOrpoLoss,
  createPreferenceLoss,
  createSimpoLoss,
  dpoLossTypes,
  ktoLossOptionsSchema,
  orpoLossOptionsSchema,
  preferenceLossOptionsSchema,
  simpoLossOptionsSchema,
} from '@ludic/objectives'
import { z } from 'zod'
import { plainConfig } from './loggers/run-loggers.js'
import type { StepMetrics, UpdateStepMetrics } from './metrics-log.js'
import { optimizerConfigSchema } from './optimizer-config.js'
import {
  encodeAndTruncatePairs,
  preferenceLengthBounds,
  responseSums,
  truncatePreferencePair,
  type PreferencePairIds,
  type ResponseSums,
} from './preference-data.js'
import { resolveSchedule, scheduleConfigSchema } from './schedule.js'
import { createDataOrder } from './data-order.js'
import { createTrainerSkeleton, runConfigFields, trainerWith, type TrainerControls, type TrainerRunOptions } from './skeleton.js'

/** Every preference loss of `@ludic/objectives`: TRL's DPO `loss_type`s, then SimPO, ORPO and KTO. */
export const preferenceLossTypes = [...dpoLossTypes, 'simpo', 'orpo', 'kto'] as const
export type PreferenceLossType = (typeof preferenceLossTypes)[number]

/** The losses without a reference model: their reward is β·log π(y)/|y|. */
const referenceFreeLossTypes: ReadonlySet<PreferenceLossType> = new Set(['simpo', 'orpo'])

/**
 * The loss: `type` and that loss's own options (`preferenceLossOptionsSchema` for the DPO types,
 * `simpoLossOptionsSchema`, `orpoLossOptionsSchema`, `ktoLossOptionsSchema`). Default `{ type: 'sigmoid' }` (DPO, β 0.1).
 * KTO takes unpaired examples: each pair gives one desirable (prompt, chosen) and one undesirable (prompt, rejected);
 * its reference point z₀ comes from mismatched examples, pair i's prompt with pair i+1's responses (in the training
 * set's order; a single pair is mismatched with itself).
 */
export const preferenceLossConfigSchema = z.discriminatedUnion(
  'type',
  [
    preferenceLossOptionsSchema.extend({ type: z.enum(dpoLossTypes).default('sigmoid') }),
    simpoLossOptionsSchema.extend({ type: z.literal('simpo') }),
    orpoLossOptionsSchema.extend({ type: z.literal('orpo') }),
    ktoLossOptionsSchema.extend({ type: z.literal('kto') }),
  ],
  {
    error: (issue) =>
      issue.code === 'invalid_union' && 'note' in issue && issue.note === 'No matching discriminator'
        ? `must be one of ${preferenceLossTypes.map((type) => `'${type}'`).join(', ')}`
        : undefined,
  },
)
export type PreferenceLossConfig = z.input<typeof preferenceLossConfigSchema>

const isFunction = (value: unknown): boolean => typeof value === 'function'

export const preferenceTrainerConfigSchema = z.strictObject({
  model: z.instanceof(CausalLanguageModel, { message: 'must be a CausalLanguageModel (createModel, loadModel)' }),
  /** Encodes the pairs; its EOS ends each response. */
  tokenizer: tokenizerSchema,
  /** Training pairs in TRL's formats (standard, conversational, implicit prompt); `readPreferencePairs` reads a JSON Lines file. */
  pairs: z.array(preferencePairSchema).min(1, 'needs at least one pair'),
  /** Pairs for `evaluate()`. Leave out to hold out `validationShare` of `pairs` instead. */
  heldOut: z.array(preferencePairSchema).min(1, 'needs at least one pair').optional(),
  /** The share of `pairs` held out for `evaluate()` (a seeded shuffle; at least one pair when > 0). Default 0. */
  validationShare: z.number().min(0).lt(1).default(0),
  /** Renders conversational pairs. Default: the tokenizer's `applyChatTemplate`. */
  chatTemplate: z.custom<ChatTemplateFunction>(isFunction, 'must be a function (messages, { addGenerationPrompt }) => string').optional(),
  loss: preferenceLossConfigSchema.prefault({}),
  /**
   * log π_ref: `'initial'`, the model's weights before the first update (as a frozen copy of the starting weights,
   * without the copy: every pair's reference log-probs are computed once, at the first `step()` or `evaluate()`,
   * and cached, as TRL's `precompute_ref_log_probs`); another model (same vocabulary), likewise precomputed; or
   * `'none'`, log π_ref = 0 (TRL's `reference_free`). Default `'initial'`, and `'none'` for SimPO and ORPO (reference-free: they take no other).
   */
  reference: z.union([z.enum(['initial', 'none']), z.instanceof(CausalLanguageModel)]).optional(),
  /** Pairs per update (each pair is two sequences in the forward pass). Default 8. */
  batchSize: z.number().int().positive().default(8),
  /** Updates `run()` takes. Default: `epochs` passes over the training pairs. */
  steps: z.number().int().positive().optional(),
  /** Passes over the training pairs `run()` makes, when `steps` is not given. Default 1. */
  epochs: z.number().positive().finite().optional(),
  /** AdamW and clipping. The learning rate defaults to 1e-6 (TRL's `DPOConfig`); tiny models and LoRA want more. */
  optimizer: optimizerConfigSchema.prefault({ learningRate: 1e-6 }),
  schedule: z.union([scheduleConfigSchema, z.custom<LearningRateSchedule>(isFunction, 'must be a function')]).optional(),
  /**
   * Most tokens of prompt + response. Longer pairs lose prompt tokens from the left down to `maxPromptLength`,
   * then response tokens from the right (`truncatePreferencePair`). Default and maximum: the model's context.
   */
  maxLength: z.number().int().min(2).optional(),
  /** The fewest prompt tokens truncation keeps (fewer only if the prompt is shorter). Default ⌊maxLength/2⌋; below `maxLength`. */
  maxPromptLength: z.number().int().positive().optional(),
  /** Seeds the held-out split and the order of pairs (a fresh permutation each epoch). Default 0. */
  seed: z.number().int().default(0),
  ...runConfigFields,
  /** Evaluate the held-out pairs every this many steps (their metrics join the step's, `eval/…`). 0: never. Default 0. */
  evaluateEvery: z.number().int().min(0).default(0),
})
export type PreferenceTrainerConfig = z.input<typeof preferenceTrainerConfigSchema>

/** One update's metrics, TRL's names: means over the batch's pairs. */
export type PreferenceStepMetrics = UpdateStepMetrics & {
  /** Mean reward of the chosen responses: β·(log π − log π_ref), or β·log π/|y| for SimPO and ORPO. */
  'rewards/chosen': number
  'rewards/rejected': number
  /** Share of pairs whose chosen reward is strictly higher (TRL: a tie counts 0). */
  'rewards/accuracies': number
  /** Mean chosen − rejected reward. */
  'rewards/margins': number
  /** Mean summed log π of the chosen responses. */
  'logps/chosen': number
  'logps/rejected': number
}

/** Held-out figures (`evaluate()`). */
export interface PreferenceEvaluation {
  /** Share of held-out pairs whose chosen reward beats the rejected one's; a tie counts ½. */
  accuracy: number
  /** Mean chosen − rejected reward. */
  margin: number
  pairs: number
}

/** `run`'s options: `steps` is the total to reach. Default: `config.steps` (or `config.epochs` passes over the pairs). */
export type PreferenceRunOptions = TrainerRunOptions<PreferenceStepMetrics>

/** A trainer on encoded preference pairs (the preference and AlignDistil trainers). */
export interface PairTrainer<Metrics extends StepMetrics> extends TrainerControls<Metrics> {
  /** The updates `run()` takes in all (`config.steps`, or `config.epochs` passes over the training pairs). */
  readonly plannedSteps: number
  /** Training and held-out pairs, encoded and truncated. */
  readonly trainPairs: readonly PreferencePairIds[]
  readonly heldOutPairs: readonly PreferencePairIds[]
  /** Updates until `steps` have been taken in total (default `plannedSteps`; a resumed run continues to it). */
  run(options?: TrainerRunOptions<Metrics>): Promise<Metrics[]>
}

export interface PreferenceTrainer extends PairTrainer<PreferenceStepMetrics> {
  /** Preference accuracy and mean margin on the held-out pairs (an error when there are none). */
  evaluate(): Promise<PreferenceEvaluation>
}

/** Reference log-probs of a set of pairs, summed over each response (float64; 0 with `reference: 'none'`). */
type ReferenceSums = ResponseSums

/** A loss call's result, in one shape for every loss type. */
interface LossOutcome {
  loss: tf.Scalar
  value: number
  /** Loss-specific metrics, TRL's names (`nll_loss`, `log_odds_ratio`, `log_odds_chosen`, `kl`). */
  extra: Record<string, number>
}

interface LossInputs {
  chosen: tf.Tensor1D
  rejected: tf.Tensor1D
  referenceChosen: tf.Tensor1D
  referenceRejected: tf.Tensor1D
  chosenLengths: tf.Tensor1D
  rejectedLengths: tf.Tensor1D
  /** KTO: log π and log π_ref of the mismatched examples, chosen half then rejected half. */
  klLogprobs?: tf.Tensor1D
  referenceKlLogprobs?: tf.Tensor1D
}

/**
 * Offline preference optimisation, TRL's `DPOTrainer` (and CPO/SimPO, ORPO, KTO): each update takes a batch
 * of pairs, computes the summed log-probs of both responses in one forward pass (chosen then rejected, TRL's
 * `concatenated_forward`), the loss against the cached reference log-probs, clips the gradients and takes one
 * AdamW step on `model.trainableParameters()` (the adapters only, under LoRA).
 */
export function createPreferenceTrainer(config: PreferenceTrainerConfig): PreferenceTrainer {
  const parsed = parseArgument(preferenceTrainerConfigSchema, config, 'config')
  const { model, tokenizer, batchSize, seed, loss: lossConfig } = parsed
  checkVocabularyFits(tokenizer, model.config)
  const referenceFree = referenceFreeLossTypes.has(lossConfig.type)
  const reference = parsed.reference ?? (referenceFree ? 'none' : 'initial')
  if (referenceFree && reference !== 'none') {
    throw new InvalidArgumentError({
      argument: 'config.reference',
      value: reference,
      message: `must be 'none' (or left out): '${lossConfig.type}' is reference-free`,
    })
  }
  if (reference instanceof CausalLanguageModel && reference.config.vocabSize !== model.config.vocabSize) {
    throw new InvalidArgumentError({
      argument: 'config.reference',
      value: reference.config.vocabSize,
      message: `must have the policy's vocabulary (${model.config.vocabSize} ids), not ${reference.config.vocabSize}`,
    })
  }
  if (parsed.steps !== undefined && parsed.epochs !== undefined) {
    throw new InvalidArgumentError({ argument: 'config.epochs', value: parsed.epochs, message: 'cannot be given with config.steps: give one of them' })
  }
  if (parsed.heldOut !== undefined && parsed.validationShare > 0) {
    throw new InvalidArgumentError({
      argument: 'config.validationShare',
      value: parsed.validationShare,
      message: 'cannot be given with config.heldOut: give one of them',
    })
  }
  const { maxLength, maxPromptLength } = preferenceLengthBounds(parsed, model.maxContextTokens)
  const loss = createLoss(lossConfig)

  // Encode and truncate; hold out a seeded share when asked.
  const encode = (pairs: readonly PreferencePair[], field: string): PreferencePairIds[] =>
    encodeAndTruncatePairs(pairs, field, { tokenizer, chatTemplate: parsed.chatTemplate, maxLength, maxPromptLength })
  let trainPairs = encode(parsed.pairs, 'config.pairs')
  let heldOutPairs = parsed.heldOut === undefined ? [] : encode(parsed.heldOut, 'config.heldOut')
  if (parsed.validationShare > 0) {
    if (trainPairs.length < 2) {
      throw new InvalidArgumentError({ argument: 'config.validationShare', value: parsed.validationShare, message: 'needs at least two pairs to split' })
    }
    const count = Math.min(trainPairs.length - 1, Math.max(1, Math.round(parsed.validationShare * trainPairs.length)))
    const order = createRandom(deriveSeed('ludic.preference.split', seed)).shuffle(Array.from({ length: trainPairs.length }, (_, index) => index))
    const held = new Set(order.slice(0, count))
    heldOutPairs = trainPairs.filter((_, index) => held.has(index))
    trainPairs = trainPairs.filter((_, index) => !held.has(index))
  }
  // KTO's mismatched examples: pair i's prompt with pair i+1's responses.
  const ktoWithKl = lossConfig.type === 'kto' && lossConfig.lossType === 'kto'
  const klPairs = ktoWithKl
    ? trainPairs.map((pair, index) => {
        const next = trainPairs[(index + 1) % trainPairs.length]!
        return truncatePreferencePair({ promptIds: pair.promptIds, chosenIds: next.chosenIds, rejectedIds: next.rejectedIds }, maxLength, maxPromptLength)
      })
    : []

  const { maxGradNorm, learningRate, ...adamW } = parsed.optimizer
  const schedule = resolveSchedule(parsed.schedule)
  const parameters = model.trainableParameters()
  const optimizer = createAdamW(parameters, { ...adamW, learningRate })
  const perStep = Math.min(batchSize, trainPairs.length)
  const plannedSteps = parsed.steps ?? Math.max(1, Math.ceil(((parsed.epochs ?? 1) * trainPairs.length) / perStep))

  // Reference log-probs, once, before the first update (and kept in checkpoints: a resumed run does not recompute them from trained weights).
  let referenceSums: Promise<ReferenceSet> | undefined
  let referenceKept: ReferenceSet | undefined
  const referenceOf = (pairs: readonly PreferencePairIds[]): Promise<ReferenceSums> =>
    reference === 'none'
      ? Promise.resolve({ chosen: new Float64Array(pairs.length), rejected: new Float64Array(pairs.length) })
      : responseSums(reference === 'initial' ? model : reference, pairs, batchSize)
  const prepareReference = () => {
    referenceSums ??= (async () => {
      referenceKept = { train: await referenceOf(trainPairs), heldOut: await referenceOf(heldOutPairs), kl: await referenceOf(klPairs) }
      return referenceKept
    })()
    return referenceSums
  }
  /** Per pair: the loss's implicit reward of each response. */
  const rewardsOf = (logprobs: ArrayLike<number>, referenceLogprobs: ArrayLike<number>, lengths: ArrayLike<number>): Float64Array =>
    Float64Array.from(logprobs, (value, index) =>
      referenceFree ? (lossConfig.beta * value) / Math.max(1, lengths[index]!) : lossConfig.beta * (value - referenceLogprobs[index]!),
    )

  let random: Random = createRandom(deriveSeed('ludic.preference', seed))
  const order = createDataOrder(trainPairs.length, batchSize)

  async function evaluate(): Promise<PreferenceEvaluation> {
    if (heldOutPairs.length === 0) {
      throw new InvalidArgumentError({
        argument: 'config.heldOut',
        value: undefined,
        message: 'is needed to evaluate: give held-out pairs or a validationShare above 0',
      })
    }
    const { heldOut: referenceHeldOut } = await prepareReference()
    const policy = await responseSums(model, heldOutPairs, batchSize)
    const chosen = rewardsOf(
      policy.chosen,
      referenceHeldOut.chosen,
      heldOutPairs.map((pair) => pair.chosenIds.length),
    )
    const rejected = rewardsOf(
      policy.rejected,
      referenceHeldOut.rejected,
      heldOutPairs.map((pair) => pair.rejectedIds.length),
    )
    const wins = Array.from(chosen, (reward, index) => (reward > rejected[index]! ? 1 : reward === rejected[index]! ? 0.5 : 0))
    return { accuracy: mean(wins), margin: mean(Array.from(chosen, (reward, index) => reward - rejected[index]!)), pairs: heldOutPairs.length }
  }

  async function update(stepIndex: number): Promise<PreferenceStepMetrics> {
    const references = await prepareReference()
    const indices = order.next(random)
    const batch = indices.map((index) => trainPairs[index]!)
    const size = batch.length
    const chosenLengths = batch.map((pair) => pair.chosenIds.length)
    const rejectedLengths = batch.map((pair) => pair.rejectedIds.length)
    const referenceChosen = indices.map((index) => references.train.chosen[index]!)
    const referenceRejected = indices.map((index) => references.train.rejected[index]!)
    // KTO's reference point: log π of the mismatched examples, without gradient (TRL).
    const kl = ktoWithKl
      ? {
          policy: await responseSums(
            model,
            indices.map((index) => klPairs[index]!),
            batchSize,
          ),
          reference: indices.map((index) => references.kl.chosen[index]!).concat(indices.map((index) => references.kl.rejected[index]!)),
        }
      : undefined
    const rate = learningRate * schedule(stepIndex)
    let outcome: Omit<LossOutcome, 'loss'> = { value: Number.NaN, extra: {} }
    let policyChosen = new Float32Array(0)
    let policyRejected = new Float32Array(0)
    const { loss: lossTensor, gradients } = computeGradients(
      () =>
        tf.tidy(() => {
          // One forward pass: the chosen responses, then the rejected ones (TRL's concatenated_forward).
          const prompts = batch.map((pair) => pair.promptIds)
          const { logprobs } = sequenceLogprobs(
            model,
            { promptIds: [...prompts, ...prompts], responseIds: [...batch.map((pair) => pair.chosenIds), ...batch.map((pair) => pair.rejectedIds)] },
            { training: true },
          )
          const sums = tf.sum(logprobs, 1) // [2·batch]
          const chosen = tf.slice(sums, [0], [size]) as tf.Tensor1D
          const rejected = tf.slice(sums, [size], [size]) as tf.Tensor1D
          policyChosen = Float32Array.from(chosen.dataSync())
          policyRejected = Float32Array.from(rejected.dataSync())
          const inputs: LossInputs = {
            chosen,
            rejected,
            referenceChosen: tf.tensor1d(referenceChosen),
            referenceRejected: tf.tensor1d(referenceRejected),
            chosenLengths: tf.tensor1d(chosenLengths, 'int32'),
            rejectedLengths: tf.tensor1d(rejectedLengths, 'int32'),
          }
          if (kl !== undefined) {
            inputs.klLogprobs = tf.tensor1d(Float32Array.from([...kl.policy.chosen, ...kl.policy.rejected]))
            inputs.referenceKlLogprobs = tf.tensor1d(kl.reference)
          }
          const result = loss(inputs)
          outcome = { value: result.value, extra: result.extra }
          return result.loss
        }),
      parameters,
    )
    const clipped = clipGradientsByGlobalNorm(gradients, maxGradNorm)
    optimizer.step(clipped.gradients, { learningRate: rate })
    tf.dispose([lossTensor, ...gradients.values(), ...clipped.gradients.values()])
    const stepCount = stepIndex + 1
    const chosenRewards = rewardsOf(policyChosen, referenceChosen, chosenLengths)
    const rejectedRewards = rewardsOf(policyRejected, referenceRejected, rejectedLengths)
    const metrics: PreferenceStepMetrics = {
      step: stepCount,
      loss: outcome.value,
      'rewards/chosen': mean(chosenRewards),
      'rewards/rejected': mean(rejectedRewards),
      'rewards/accuracies': mean(Array.from(chosenRewards, (reward, index) => (reward > rejectedRewards[index]! ? 1 : 0))),
      'rewards/margins': mean(Array.from(chosenRewards, (reward, index) => reward - rejectedRewards[index]!)),
      'logps/chosen': mean(policyChosen),
      'logps/rejected': mean(policyRejected),
      ...outcome.extra,
      grad_norm: clipped.norm,
      learning_rate: rate,
    }
    if (parsed.evaluateEvery > 0 && stepCount % parsed.evaluateEvery === 0) {
      const evaluation = await evaluate()
      metrics['eval/accuracy'] = evaluation.accuracy
      metrics['eval/margin'] = evaluation.margin
    }
    return metrics
  }

  const skeleton = createTrainerSkeleton<PreferenceStepMetrics>({
    name: 'preference',
    model,
    optimizer,
    run: parsed,
    plainConfig: () => plainConfig(parsed, ['model', 'tokenizer', 'reference', 'pairs', 'heldOut', 'chatTemplate', 'loggers', 'loggedConfig']),
    update: async (stepIndex) => ({ metrics: await update(stepIndex) }),
    random: () => random,
    saveState: () => ({ order: order.getState(), ...(referenceKept === undefined ? {} : { reference: referenceSetToJson(referenceKept) }) }),
    restoreState(state, restored) {
      random = restored
      const saved = (state ?? {}) as { order?: number[]; reference?: ReturnType<typeof referenceSetToJson> }
      order.setState(saved.order)
      if (saved.reference !== undefined) {
        referenceKept = referenceSetFromJson(saved.reference)
        referenceSums = Promise.resolve(referenceKept)
      }
    },
    progressFields: (metrics) => ({
      loss: metrics.loss,
      accuracy: metrics['rewards/accuracies'],
      ...(metrics['eval/accuracy'] === undefined ? {} : { 'eval.accuracy': metrics['eval/accuracy'] }),
    }),
    dispose: () => optimizer.dispose(),
  })
  return trainerWith(skeleton, {
    optimizer,
    plannedSteps,
    trainPairs,
    heldOutPairs,
    run: ({ steps = plannedSteps, label = `preference (${lossConfig.type})`, ...options }: PreferenceRunOptions = {}) =>
      skeleton.run({ ...options, steps, label }),
    evaluate,
  })
}

/** The reference log-probs of the training, held-out and KTO-mismatched pairs. */
interface ReferenceSet {
  train: ReferenceSums
  heldOut: ReferenceSums
  kl: ReferenceSums
}

/** As plain numbers for a checkpoint (a float64 survives JSON exactly). */
const referenceSetToJson = (set: ReferenceSet) =>
  Object.fromEntries(Object.entries(set).map(([name, sums]) => [name, { chosen: Array.from(sums.chosen), rejected: Array.from(sums.rejected) }])) as Record<
    keyof ReferenceSet,
    { chosen: number[]; rejected: number[] }
  >
const referenceSetFromJson = (json: ReturnType<typeof referenceSetToJson>): ReferenceSet =>
  Object.fromEntries(
    Object.entries(json).map(([name, sums]) => [name, { chosen: Float64Array.from(sums.chosen), rejected: Float64Array.from(sums.rejected) }]),
  ) as unknown as ReferenceSet

/** The loss of `config.loss`, called in one shape; errors of its options name `config.loss`. */
function createLoss(config: z.output<typeof preferenceLossConfigSchema>): (inputs: LossInputs) => LossOutcome {
  const { type, ...options } = config
  try {
    switch (type) {
      case 'simpo': {
        const simpo = createSimpoLoss(options as z.input<typeof simpoLossOptionsSchema>)
        return (inputs) => {
          const result = simpo({
            chosenLogprobs: inputs.chosen,
            rejectedLogprobs: inputs.rejected,
            chosenLengths: inputs.chosenLengths,
            rejectedLengths: inputs.rejectedLengths,
          })
          return { loss: result.loss, value: result.metrics.loss, extra: {} }
        }
      }
      case 'orpo': {
        const orpo = createOrpoLoss(options as z.input<typeof orpoLossOptionsSchema>)
        return (inputs) => {
          const result = orpo({
            chosenLogprobs: inputs.chosen,
            rejectedLogprobs: inputs.rejected,
            chosenLengths: inputs.chosenLengths,
            rejectedLengths: inputs.rejectedLengths,
          })
          const { nllLoss, logOddsRatio, logOddsChosen } = result.metrics
          return { loss: result.loss, value: result.metrics.loss, extra: { nll_loss: nllLoss, log_odds_ratio: logOddsRatio, log_odds_chosen: logOddsChosen } }
        }
      }
      case 'kto': {
        const kto = createKtoLoss(options as z.input<typeof ktoLossOptionsSchema>)
        return (inputs) => {
          const size = inputs.chosen.shape[0]
          const result = kto({
            logprobs: tf.concat([inputs.chosen, inputs.rejected]),
            referenceLogprobs: tf.concat([inputs.referenceChosen, inputs.referenceRejected]),
            labels: Array.from({ length: 2 * size }, (_, index) => index < size),
            ...(inputs.klLogprobs !== undefined && { klLogprobs: inputs.klLogprobs }),
            ...(inputs.referenceKlLogprobs !== undefined && { referenceKlLogprobs: inputs.referenceKlLogprobs }),
          })
          return { loss: result.loss, value: result.metrics.loss, extra: { kl: result.metrics.kl } }
        }
      }
      default: {
        const dpo = createPreferenceLoss(type, options as z.input<typeof preferenceLossOptionsSchema>)
        return (inputs) => {
          const result = dpo({
            chosenLogprobs: inputs.chosen,
            rejectedLogprobs: inputs.rejected,
            referenceChosenLogprobs: inputs.referenceChosen,
            referenceRejectedLogprobs: inputs.referenceRejected,
            chosenLengths: inputs.chosenLengths,
            rejectedLengths: inputs.rejectedLengths,
          })
          return { loss: result.loss, value: result.metrics.loss, extra: {} }
        }
      }
    }
  } catch (error) {
    if (!InvalidArgumentError.isInstance(error) || !error.argument.startsWith('options')) throw error
    // The same error, naming the config's field: its message without the `Invalid argument '…' (value: …): ` head.
    const head = `Invalid argument '${error.argument}' (value: `.length
    const message = error.message.slice(error.message.indexOf('): ', head) + 3)
    throw new InvalidArgumentError({ argument: error.argument.replace(/^options/, 'config.loss'), value: error.value, message, cause: error })
  }
}

const mean = (values: ArrayLike<number>): number => {
  let total = 0
  for (let index = 0; index < values.length; index++) total += values[index]!
  return values.length === 0 ? 0 : total / values.length
}
