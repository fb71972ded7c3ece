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
import { CausalLanguageModel, checkVocabularyFits, clipGradientsByGlobalNorm, computeGradients, createAdamW } from '@ludic/model'
import { alignDistilLossOptionsSchema, createAlignDistilLoss, dpoLossTypes, readLossMetrics, type AlignDistilLossMetricTensors } from '@ludic/objectives'
import { z } from 'zod'
import { plainConfig } from './loggers/run-loggers.js'
import type { UpdateStepMetrics } from './metrics-log.js'
import { encodeAndTruncatePairs, preferenceLengthBounds, responseSums, type PreferencePairIds, type ResponseSums } from './preference-data.js'
import {
  createPreferenceTrainer,
  type PairTrainer,
  preferenceTrainerConfigSchema,
  type PreferenceStepMetrics,
  type PreferenceTrainerConfig,
} from './preference-trainer.js'
import { resolveSchedule } from './schedule.js'
import { createDataOrder } from './data-order.js'
import { createTrainerSkeleton, runConfigFields, trainerWith, type TrainerRunOptions } from './skeleton.js'

const modelSchema = z.instanceof(CausalLanguageModel, { message: 'must be a CausalLanguageModel (createModel, loadModel)' })

export const alignDistilTrainerConfigSchema = z.strictObject({
  /** The policy, starting from the reference (SFT) weights; its trainable parameters are updated. */
  model: modelSchema,
  /** Encodes the pairs; its EOS ends each response. */
  tokenizer: tokenizerSchema,
  /** The DPO model π_dpo (frozen): trained with DPO at β₀ = `loss.beta` from the reference (`trainContrastiveDpoModels`). */
  dpoModel: modelSchema,
  /** The reverse-DPO model π_dpo⁻ (frozen), DPO on the pairs with chosen and rejected swapped. Required by the `contrastive` variant. */
  reverseDpoModel: modelSchema.optional(),
  /**
   * π_ref: the `reference` variant's anchor and the denominator of `evaluate()`'s implicit reward. Default: a frozen
   * copy of `model`'s weights at creation (freed by `dispose()`).
   */
  reference: modelSchema.optional(),
  /**
   * The pairs whose prompts and **chosen** responses are distilled on (off-policy, Eq. 19: the teacher is read along
   * the dataset's preferred responses); the rejected responses are not used. TRL's formats, as the preference trainer.
   */
  pairs: z.array(preferencePairSchema).min(1, 'needs at least one pair'),
  /** `createAlignDistilLoss`'s options. Default: contrastive, adaptive α_t (r = 30, ε = 0.001), β₀ = 0.1, weighted by β_t. */
  loss: alignDistilLossOptionsSchema.prefault({}),
  /** Updates `run()` takes. Default: one pass over the pairs. */
  steps: z.number().int().positive().optional(),
  // The preference trainer's data, batching, optimizer and logging fields, with its defaults (written once).
  ...preferenceTrainerConfigSchema.pick({
    heldOut: true,
    chatTemplate: true,
    batchSize: true,
    optimizer: true,
    schedule: true,
    maxLength: true,
    maxPromptLength: true,
    seed: true,
    evaluateEvery: true,
  }).shape,
  ...runConfigFields,
})
export type AlignDistilTrainerConfig = z.input<typeof alignDistilTrainerConfigSchema>

/** One update's metrics: the loss's (`createAlignDistilLoss`, its `loss` too), means over the batch's valid tokens. */
export type AlignDistilStepMetrics = UpdateStepMetrics & {
  /** Mean KL(π_θ ‖ π*) per token, unweighted. */
  teacherKl: number
  /** Mean α_t. */
  extrapolationMean: number
  /** Mean D_TVD between the two models of the reward. */
  totalVariationMean: number
  validTokens: number
}

/** Preference accuracy of a policy against its reference (`preferenceAccuracy`, `evaluate()`). */
export interface PreferenceAccuracy {
  /** Share of pairs with log π/π_ref(chosen) > log π/π_ref(rejected) (the DPO implicit reward's sign); a tie counts ½. */
  accuracy: number
  /** Mean of log π/π_ref(chosen) − log π/π_ref(rejected) (the implicit reward margin divided by β). */
  margin: number
  pairs: number
}

/** `run`'s options: `steps` is the total to reach. Default: `config.steps` (one pass over the pairs). */
export type AlignDistilRunOptions = TrainerRunOptions<AlignDistilStepMetrics>

/** The pairs' prompts and chosen responses are distilled on. */
export interface AlignDistilTrainer extends PairTrainer<AlignDistilStepMetrics> {
  /** The policy's preference accuracy against π_ref on `pairs` (encoded as the training pairs), by default `heldOut`. */
  evaluate(pairs?: readonly PreferencePair[]): Promise<PreferenceAccuracy>
}

/**
 * AlignDistil (Zhang et al., ACL 2025, https://arxiv.org/abs/2503.02832), off-policy (Eq. 19): each update takes a
 * batch of prompts with their chosen responses, computes the full-vocabulary logits at the response positions of the
 * frozen DPO and reverse-DPO models (or DPO and reference) without gradient, and the policy's with gradient, then
 * `createAlignDistilLoss` — β_t·KL(π_θ ‖ π*) per token with the teacher z* = z_dpo + α_t(z_dpo − z_dpo⁻) and the
 * token-adaptive α_t — clips the gradients and takes one AdamW step on `model.trainableParameters()`.
 */
export function createAlignDistilTrainer(config: AlignDistilTrainerConfig): AlignDistilTrainer {
  const parsed = parseArgument(alignDistilTrainerConfigSchema, config, 'config')
  const { model, tokenizer, dpoModel, batchSize, seed } = parsed
  checkVocabularyFits(tokenizer, model.config)
  const contrastive = parsed.loss.variant === 'contrastive'
  if (contrastive && parsed.reverseDpoModel === undefined) {
    throw new InvalidArgumentError({
      argument: 'config.reverseDpoModel',
      value: undefined,
      message: "is required by the 'contrastive' variant (config.loss.variant)",
    })
  }
  if (!contrastive && parsed.reverseDpoModel !== undefined) {
    throw new InvalidArgumentError({
      argument: 'config.reverseDpoModel',
      value: 'a model',
      message: "is not used by the 'reference' variant (config.loss.variant)",
    })
  }
  const others = { dpoModel, reverseDpoModel: parsed.reverseDpoModel, reference: parsed.reference }
  for (const [name, other] of Object.entries(others)) {
    if (other === model)
      throw new InvalidArgumentError({ argument: `config.${name}`, value: 'the policy', message: 'must be another model than config.model (it stays frozen)' })
    if (other !== undefined && other.config.vocabSize !== model.config.vocabSize) {
      throw new InvalidArgumentError({
        argument: `config.${name}`,
        value: other.config.vocabSize,
        message: `must have the policy's vocabulary (${model.config.vocabSize} ids)`,
      })
    }
  }
  const { maxLength, maxPromptLength } = preferenceLengthBounds(parsed, model.maxContextTokens, Math.min(model.maxContextTokens, dpoModel.maxContextTokens))
  const loss = createAlignDistilLoss(parsed.loss)
  const encode = (pairs: readonly PreferencePair[], field: string): PreferencePairIds[] =>
    encodeAndTruncatePairs(pairs, field, { tokenizer, chatTemplate: parsed.chatTemplate, maxLength, maxPromptLength })
  const trainPairs = encode(parsed.pairs, 'config.pairs')
  const heldOutPairs = parsed.heldOut === undefined ? [] : encode(parsed.heldOut, 'config.heldOut')
  const ownReference = parsed.reference === undefined ? copyModel(model, 'config.model') : undefined
  const reference = parsed.reference ?? ownReference!
  // The frozen models' logits, `[batch, tokens, vocab]` at the response positions (the loss's inputs besides the policy's).
  const [firstTeacher, secondTeacher] = contrastive ? [dpoModel, parsed.reverseDpoModel!] : [dpoModel, reference]

  const { maxGradNorm, learningRate, ...adamW } = parsed.optimizer
  const schedule = resolveSchedule(parsed.schedule)
  const parameters = model.trainableParameters()
  const optimizer = createAdamW(parameters, { ...adamW, learningRate })
  const perStep = Math.min(batchSize, trainPairs.length)
  const plannedSteps = parsed.steps ?? Math.max(1, Math.ceil(trainPairs.length / perStep))
  let heldOutReference: Promise<ResponseSums> | undefined

  let random: Random = createRandom(deriveSeed('ludic.align-distil', seed))
  const order = createDataOrder(trainPairs.length, batchSize)

  async function evaluate(pairs?: readonly PreferencePair[]): Promise<PreferenceAccuracy> {
    if (pairs === undefined) {
      if (heldOutPairs.length === 0) {
        throw new InvalidArgumentError({ argument: 'pairs', value: undefined, message: 'are needed to evaluate: pass pairs or give config.heldOut' })
      }
      heldOutReference ??= responseSums(reference, heldOutPairs, batchSize)
      return preferenceAccuracyOfSums(await responseSums(model, heldOutPairs, batchSize), await heldOutReference)
    }
    if (!Array.isArray(pairs) || pairs.length === 0)
      throw new InvalidArgumentError({ argument: 'pairs', value: pairs, message: 'must be a non-empty array of preference pairs' })
    const encoded = encode(parseArgument(z.array(preferencePairSchema), pairs, 'pairs'), 'pairs')
    return preferenceAccuracy({ model, reference, pairs: encoded, batchSize })
  }

  async function update(stepIndex: number): Promise<AlignDistilStepMetrics> {
    const batch = order.next(random).map((index) => trainPairs[index]!)
    const sequences = { promptIds: batch.map((pair) => pair.promptIds), responseIds: batch.map((pair) => pair.chosenIds) }
    const rate = learningRate * schedule(stepIndex)
    // The teachers: frozen, no gradient (computed outside the differentiated function), freed after the update.
    const first = tf.tidy(() => responseLogits(firstTeacher, sequences).logits)
    const second = tf.tidy(() => responseLogits(secondTeacher, sequences).logits)
    let lossMetrics: AlignDistilLossMetricTensors | undefined
    let computed: { loss: tf.Scalar; gradients: Map<string, tf.Tensor> }
    try {
      computed = computeGradients(
        () =>
          tf.tidy(() => {
            const { logits, mask } = responseLogits(model, sequences, true) // [batch, tokens, vocab], [batch, tokens]
            const result = loss({ logits, mask, dpoLogits: first, ...(contrastive ? { reverseDpoLogits: second } : { referenceLogits: second }) })
            lossMetrics = result.metrics
            return result.loss
          }),
        parameters,
      )
    } finally {
      tf.dispose([first, second])
    }
    const { loss: lossTensor, gradients } = computed
    try {
      const read = await readLossMetrics(lossMetrics!) // before the update: a bad value never reaches the weights
      const clipped = clipGradientsByGlobalNorm(gradients, maxGradNorm)
      optimizer.step(clipped.gradients, { learningRate: rate })
      tf.dispose([...clipped.gradients.values()])
      const stepCount = stepIndex + 1
      const metrics: AlignDistilStepMetrics = { step: stepCount, ...read, grad_norm: clipped.norm, learning_rate: rate }
      if (parsed.evaluateEvery > 0 && stepCount % parsed.evaluateEvery === 0 && heldOutPairs.length > 0) {
        const evaluation = await evaluate()
        metrics['eval/accuracy'] = evaluation.accuracy
        metrics['eval/margin'] = evaluation.margin
      }
      return metrics
    } finally {
      tf.dispose([lossTensor, ...gradients.values()])
    }
  }

  const skeleton = createTrainerSkeleton<AlignDistilStepMetrics>({
    name: 'align-distil',
    model,
    optimizer,
    run: parsed,
    plainConfig: () =>
      plainConfig(parsed, ['model', 'tokenizer', 'dpoModel', 'reverseDpoModel', 'reference', 'pairs', 'heldOut', 'chatTemplate', 'loggers', 'loggedConfig']),
    // The copy of the starting weights it made is saved once and restored on resume (a model given is the caller's).
    reference: ownReference,
    update: async (stepIndex) => ({ metrics: await update(stepIndex) }),
    random: () => random,
    saveState: () => ({ order: order.getState() }),
    restoreState(state, restored) {
      random = restored
      order.setState((state as { order?: number[] } | undefined)?.order)
    },
    progressFields: (metrics) => ({
      loss: metrics.loss,
      kl: metrics.teacherKl,
      ...(metrics['eval/accuracy'] === undefined ? {} : { 'eval.accuracy': metrics['eval/accuracy'] }),
    }),
    dispose() {
      optimizer.dispose()
      ownReference?.dispose()
    },
  })
  const trainer = trainerWith(skeleton, {
    optimizer,
    plannedSteps,
    trainPairs,
    heldOutPairs,
    run: ({ steps = plannedSteps, ...options }: AlignDistilRunOptions = {}) => skeleton.run({ ...options, steps }),
    evaluate,
  })
  return trainer
}

function preferenceAccuracyOfSums(policy: ResponseSums, reference: ResponseSums): PreferenceAccuracy {
  const pairs = policy.chosen.length
  let wins = 0
  let margin = 0
  for (let index = 0; index < pairs; index++) {
    const chosen = policy.chosen[index]! - reference.chosen[index]!
    const rejected = policy.rejected[index]! - reference.rejected[index]!
    wins += chosen > rejected ? 1 : chosen === rejected ? 0.5 : 0
    margin += chosen - rejected
  }
  return { accuracy: pairs === 0 ? 0 : wins / pairs, margin: pairs === 0 ? 0 : margin / pairs, pairs }
}

/**
 * Preference accuracy of `model` against `reference` on encoded pairs: the sign of the DPO implicit reward margin
 * log π/π_ref(chosen) − log π/π_ref(rejected) (β > 0 does not change it), a tie counting ½ — what the preference
 * trainer's `evaluate()` measures for the DPO family, for any policy (a DPO-trained one, an AlignDistil student).
 * No gradient; `batchSize` sequences per forward pass.
 */
export async function preferenceAccuracy(options: {
  model: CausalLanguageModel
  reference: CausalLanguageModel
  pairs: readonly PreferencePairIds[]
  batchSize?: number
}): Promise<PreferenceAccuracy> {
  const { model, reference, pairs, batchSize = 16 } = options
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new InvalidArgumentError({ argument: 'options.batchSize', value: batchSize, message: 'must be a positive integer' })
  return preferenceAccuracyOfSums(await responseSums(model, pairs, batchSize), await responseSums(reference, pairs, batchSize))
}

/**
 * Next-token logits `[batch, responseLength, vocab]` at the positions that predict each response token (prompts
 * left-padded, responses right-padded: `sequenceLogprobs`'s layout) and the response mask `[batch, responseLength]`.
 * Differentiable; call inside `tf.tidy`.
 */
export function responseLogits(
  model: CausalLanguageModel,
  sequences: { promptIds: readonly Int32Array[]; responseIds: readonly Int32Array[] },
  training = false,
): { logits: tf.Tensor3D; mask: tf.Tensor2D } {
  const { promptIds, responseIds } = sequences
  const batch = promptIds.length
  const promptLength = Math.max(...promptIds.map((ids) => ids.length))
  const responseLength = Math.max(1, ...responseIds.map((ids) => ids.length))
  if (batch === 0 || promptLength < 1) {
    throw new InvalidArgumentError({ argument: 'sequences.promptIds', value: promptLength, message: 'needs at least one prompt of at least one token' })
  }
  const width = promptLength + responseLength
  const inputIds: Int32Array[] = []
  const attentionMask: Int32Array[] = []
  const responseMask = new Float32Array(batch * responseLength)
  for (let row = 0; row < batch; row++) {
    const prompt = promptIds[row]!
    const response = responseIds[row]!
    const ids = new Int32Array(width).fill(model.config.padTokenId ?? 0)
    const attention = new Int32Array(width)
    ids.set(prompt, promptLength - prompt.length)
    ids.set(response, promptLength)
    attention.fill(1, promptLength - prompt.length, promptLength + response.length)
    inputIds.push(ids)
    attentionMask.push(attention)
    responseMask.fill(1, row * responseLength, row * responseLength + response.length)
  }
  const hidden = model.hiddenStates(inputIds, { attentionMask, training }) // [batch, width, hidden]
  const predicting = tf.slice(hidden, [0, promptLength - 1, 0], [batch, responseLength, hidden.shape[2]]) as tf.Tensor3D // [batch, responseLength, hidden]
  return { logits: model.logitsFromHidden(predicting, training), mask: tf.tensor2d(responseMask, [batch, responseLength]) }
}

/** A frozen copy of a model's weights (same configuration and context); refuses models with LoRA adapters. */
function copyModel(model: CausalLanguageModel, argument: string): CausalLanguageModel {
  if (model.linearAdapters().size > 0) {
    throw new InvalidArgumentError({ argument, value: [...model.linearAdapters().keys()], message: 'has LoRA adapters: merge them before copying its weights' })
  }
  return new CausalLanguageModel(model.config, model.parameters(), { maxContextTokens: model.maxContextTokens })
}

export const contrastiveDpoConfigSchema = z.strictObject({
  /** The starting (reference/SFT) model; its weights are copied twice and stay unchanged. */
  model: modelSchema,
  /** The preference pairs; the reverse-DPO model trains on them with chosen and rejected swapped. */
  pairs: z.array(preferencePairSchema).min(1, 'needs at least one pair'),
  /** Updates of each model. */
  steps: z.number().int().positive(),
})

/**
 * The rest of `createPreferenceTrainer`'s config (tokenizer, loss — a DPO-family type —, batch size, optimizer,
 * schedule, lengths, seed), shared by both models; `reference` is always the starting weights.
 */
export type ContrastiveDpoConfig = z.input<typeof contrastiveDpoConfigSchema> &
  Omit<PreferenceTrainerConfig, 'model' | 'pairs' | 'heldOut' | 'validationShare' | 'reference' | 'steps' | 'epochs' | 'runDirectory' | 'evaluateEvery'> & {
    /** Called after each update of either model, with the model being trained (to evaluate or copy it). */
    onStep?: (name: 'dpo' | 'reverse-dpo', metrics: PreferenceStepMetrics, model: CausalLanguageModel) => void | Promise<void>
  }

/** The two teachers and each one's training metrics. */
export interface ContrastiveDpoModels {
  dpoModel: CausalLanguageModel
  reverseDpoModel: CausalLanguageModel
  history: { dpo: PreferenceStepMetrics[]; reverseDpo: PreferenceStepMetrics[] }
}

/**
 * AlignDistil's two teachers (§4.1): copies the starting weights twice and trains one copy with DPO on `pairs`
 * (π_dpo) and the other on the same pairs with chosen and rejected swapped (π_dpo⁻, the reverse-DPO model), each
 * for `steps` updates of `createPreferenceTrainer` (reference: the starting weights). The caller disposes the models.
 */
export async function trainContrastiveDpoModels(config: ContrastiveDpoConfig): Promise<ContrastiveDpoModels> {
  const { onStep, ...rest } = config
  const { model, pairs, steps } = parseArgument(contrastiveDpoConfigSchema, { model: rest.model, pairs: rest.pairs, steps: rest.steps }, 'config')
  const lossType = rest.loss?.type ?? 'sigmoid'
  if (!(dpoLossTypes as readonly string[]).includes(lossType)) {
    throw new InvalidArgumentError({
      argument: 'config.loss.type',
      value: lossType,
      message: `must be a DPO-family loss (${dpoLossTypes.join(', ')}): the teachers' reward is β·log π/π_ref`,
    })
  }
  const swapped = pairs.map((pair) => ({ ...pair, chosen: pair.rejected, rejected: pair.chosen }) as PreferencePair)
  const trained: CausalLanguageModel[] = []
  const history: PreferenceStepMetrics[][] = []
  try {
    for (const [name, set] of [
      ['dpo', pairs],
      ['reverse-dpo', swapped],
    ] as const) {
      const copy = copyModel(model, 'config.model')
      trained.push(copy)
      const trainer = createPreferenceTrainer({ ...(rest as Omit<ContrastiveDpoConfig, 'onStep'>), model: copy, pairs: [...set], steps, reference: 'initial' })
      try {
        history.push(await trainer.run({ steps, ...(onStep === undefined ? {} : { onStep: (metrics) => onStep(name, metrics, copy) }) }))
      } finally {
        trainer.dispose()
      }
    }
  } catch (error) {
    for (const copy of trained) copy.dispose()
    throw error
  }
  return { dpoModel: trained[0]!, reverseDpoModel: trained[1]!, history: { dpo: history[0]!, reverseDpo: history[1]! } }
}
