import * as tf from '@tensorflow/tfjs-core'
import {
  clipGradientsByGlobalNorm,
  computeGradients,
  createAdamW,
  createCriticModel,
  createValueHead,
  sequenceValues,
  type AdamW,
  type CausalLanguageModel,
  type ValueHead,
} from '@ludic/model'
import { valueLoss } from '@ludic/objectives'
import { z } from 'zod'
import { optimizerConfigSchema } from '../optimizer-config.js'
import { padRows, raggedOf, responseRows, type TokenSequence } from '../sequences.js'
import { withColumns, type Experience } from './experience.js'
import { sequencesOf } from './stages.js'
import { microBatches, pickRows } from './update.js'

/**
 * PPO's critic (Schulman et al. 2017; verl's `critic`): a value V(s_t) for the state before each response token, the
 * estimator's `values` (GAE), trained toward the estimator's returns with the clipped value loss (verl's
 * `compute_value_loss`).
 */
export const criticConfigSchema = z.strictObject({
  /**
   * `separate` (verl's critic): a value model of its own, made from the policy's weights (`createCriticModel`: a copy
   * with a value head, every weight trained, the memory of a second model and its optimizer), updated on each
   * mini-batch after the policy. `shared`: a value head on the policy's trunk (`score.weight`), its loss added to the
   * policy's (`valueCoefficient`), one forward and one backward pass for both; under LoRA the head trains beside the
   * adapters. Default `separate`.
   */
  model: z.enum(['separate', 'shared']).default('separate'),
  /** The separate critic's optimizer. Default: the policy's settings (`config.optimizer`). */
  optimizer: optimizerConfigSchema.optional(),
  /** verl `critic.cliprange_value`: how far a value may move from the rollout's before the loss stops pulling. Default 0.5. */
  clipRangeValue: z.number().nonnegative().default(0.5),
  /** A shared trunk's loss gets + c·value loss (PPO's c₁). Default 0.5. */
  valueCoefficient: z.number().positive().default(0.5),
  /** Seed of the value head's initialisation. Default 0. */
  seed: z.number().int().default(0),
})
export type CriticConfig = z.input<typeof criticConfigSchema>
export type ParsedCriticConfig = z.output<typeof criticConfigSchema>

/** A run's critic: its values for a batch, its own update (a separate model), what its checkpoint holds. */
export interface Critic {
  readonly kind: 'separate' | 'shared'
  /** The head that gives the values (on the policy for `shared`). */
  readonly valueHead: ValueHead
  /** The model the head sits on. */
  readonly model: CausalLanguageModel
  readonly clipRangeValue: number
  readonly valueCoefficient: number
  /** A separate critic's trained parameters and optimizer (its checkpoint); undefined for a shared head (in the policy's). */
  readonly own: { parameters: ReadonlyMap<string, tf.Variable>; optimizer: AdamW; maxGradNorm: number; learningRate: number } | undefined
  dispose(): void
}

/**
 * The critic a config asks for, on `policy`. A shared head is added to the policy before its optimizer is made (so
 * the optimizer updates it); a separate critic is a model of its own with its own optimizer.
 */
export function createCritic(policy: CausalLanguageModel, config: ParsedCriticConfig, policyOptimizer: z.output<typeof optimizerConfigSchema>): Critic {
  if (config.model === 'shared') {
    const valueHead = createValueHead(policy, { seed: config.seed })
    return {
      kind: 'shared',
      valueHead,
      model: policy,
      clipRangeValue: config.clipRangeValue,
      valueCoefficient: config.valueCoefficient,
      own: undefined,
      dispose: () => valueHead.dispose(),
    }
  }
  const critic = createCriticModel(policy, { seed: config.seed })
  const { maxGradNorm, learningRate, ...adamW } = config.optimizer ?? policyOptimizer
  const parameters = critic.model.trainableParameters()
  const optimizer = createAdamW(parameters, { ...adamW, learningRate })
  return {
    kind: 'separate',
    valueHead: critic.valueHead,
    model: critic.model,
    clipRangeValue: config.clipRangeValue,
    valueCoefficient: config.valueCoefficient,
    own: { parameters, optimizer, maxGradNorm, learningRate },
    dispose() {
      optimizer.dispose()
      critic.model.dispose()
    },
  }
}

/** The critic's values of every response token (no gradient), `chunkSize` sequences per forward pass, as the `values` column. */
export async function valueStage(experience: Experience, critic: Critic, chunkSize: number): Promise<Experience> {
  const [values] = await responseRows(sequencesOf(experience), chunkSize, 1, (chunk) => [
    sequenceValues(critic.model, critic.valueHead, raggedOf(chunk)).values,
  ])
  return withColumns(experience, { values: values! })
}

/** The rows a critic trains on: the sequences, the values when they were played, and the targets. */
export interface CriticRows {
  sequences: readonly TokenSequence[]
  oldValues: readonly Float32Array[]
  returns: readonly Float32Array[]
}

/**
 * The clipped value loss of a forward's `values` against the rows' targets, as a token mean over `globalTokenCount`
 * tokens (the mini-batch's, so micro-batches add up to it): verl's `compute_value_loss`.
 */
export function criticLoss(values: tf.Tensor2D, mask: tf.Tensor2D, rows: CriticRows, critic: Critic, globalTokenCount: number) {
  const [batch, columns] = values.shape
  const matrix = (data: readonly ArrayLike<number>[]) => tf.tensor2d(padRows(data, columns), [batch, columns])
  return valueLoss(
    { values, oldValues: matrix(rows.oldValues), returns: matrix(rows.returns), mask },
    { clipRangeValue: critic.clipRangeValue, globalTokenCount: Math.max(globalTokenCount, 1) },
  )
}

/**
 * One optimizer step of a separate critic on a mini-batch: the value loss over its micro-batches (`microBatchTokens`),
 * gradients summed, clipped, one AdamW step. Returns `valueLoss`, `valueClipFraction` (token-weighted),
 * `valuePredictionMean` and `criticGradNorm`.
 */
export function updateSeparateCritic(critic: Critic, rows: CriticRows, options: { microBatchTokens: number | undefined; learningRateScale: number }) {
  const own = critic.own!
  const globalTokenCount = rows.sequences.reduce((total, sequence) => total + sequence.responseIds.length, 0)
  let sum: Map<string, tf.Tensor> | undefined
  let lossTotal = 0
  let clipped = 0
  let prediction = 0
  try {
    for (const indices of microBatches(rows.sequences, options.microBatchTokens)) {
      const micro = pickRows(rows, indices)
      const tokens = micro.sequences.reduce((total, sequence) => total + sequence.responseIds.length, 0)
      let metrics: ReturnType<typeof criticLoss>['metrics'] | undefined
      const { loss, gradients } = computeGradients(
        () =>
          tf.tidy(() => {
            const { values, responseMask } = sequenceValues(critic.model, critic.valueHead, raggedOf(micro.sequences), { training: true })
            const term = criticLoss(values, responseMask, micro, critic, globalTokenCount)
            metrics = term.metrics
            return term.loss
          }),
        own.parameters,
      )
      loss.dispose()
      lossTotal += metrics!.valueLoss
      clipped += (metrics!.valueClipFraction * tokens) / Math.max(globalTokenCount, 1)
      prediction += (metrics!.valuePredictionMean * tokens) / Math.max(globalTokenCount, 1)
      if (sum === undefined) sum = gradients
      else {
        const next = new Map<string, tf.Tensor>()
        for (const [name, gradient] of gradients) next.set(name, tf.add(sum.get(name)!, gradient))
        tf.dispose([...sum.values(), ...gradients.values()])
        sum = next
      }
    }
    const clippedGradients = clipGradientsByGlobalNorm(sum!, own.maxGradNorm)
    own.optimizer.step(clippedGradients.gradients, { learningRate: own.learningRate * options.learningRateScale })
    tf.dispose([...clippedGradients.gradients.values()])
    return { valueLoss: lossTotal, valueClipFraction: clipped, valuePredictionMean: prediction, criticGradNorm: clippedGradients.norm }
  } finally {
    if (sum !== undefined) tf.dispose([...sum.values()])
  }
}
