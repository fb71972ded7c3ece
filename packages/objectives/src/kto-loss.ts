import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { readSequenceValues } from './sequence-inputs.js'
import { requireShape, requireTensor } from './tensor-checks.js'

export const ktoLossOptionsSchema = z.strictObject({
  /** `kto` (Ethayarajh et al. 2024, https://arxiv.org/abs/2402.01306) or `apo_zero_unpaired` (APO-zero on unpaired data). Default `kto`. */
  lossType: z.enum(['kto', 'apo_zero_unpaired']).default('kto'),
  /** β. Default 0.1 (TRL). */
  beta: z.number().positive().default(0.1),
  /** λ_D, weight of desirable examples. Default 1. */
  desirableWeight: z.number().nonnegative().default(1),
  /** λ_U, weight of undesirable examples. Default 1. */
  undesirableWeight: z.number().nonnegative().default(1),
})
export type KtoLossOptions = z.input<typeof ktoLossOptionsSchema>

export interface KtoLossInputs {
  /** `[batch]` float32: log π of each completion (summed over its tokens). Differentiated. */
  logprobs: tf.Tensor
  /** `[batch]` float32: log π_ref of each completion. */
  referenceLogprobs: tf.Tensor
  /** `[batch]`: true = desirable. A bool (or 0/1 int32) tensor, or an array of booleans. */
  labels: tf.Tensor | readonly boolean[]
  /**
   * `[batch]` float32: log π of mismatched (prompt, other completion) pairs, for KTO's reference point
   * (TRL shifts the completions by one within the batch). Required by `kto`; no gradient flows through it.
   */
  klLogprobs?: tf.Tensor
  /** `[batch]` float32: log π_ref of the same mismatched pairs. Required by `kto`. */
  referenceKlLogprobs?: tf.Tensor
}

export interface KtoLossResult {
  /** Scalar loss, differentiable with respect to `inputs.logprobs`. The caller disposes it. */
  loss: tf.Scalar
  metrics: {
    loss: number
    /** The reference point z₀ = max(mean(KL log-ratio), 0) (0 for `apo_zero_unpaired`). */
    kl: number
    /** Σ β·ℓ over desirable / undesirable examples and their counts (TRL logs sums and counts). */
    rewardsChosenSum: number
    rewardsRejectedSum: number
    chosenCount: number
    rejectedCount: number
  }
  /** β·ℓ of the desirable examples, in batch order (TRL `chosen_rewards`). */
  chosenRewards: Float32Array
  /** β·ℓ of the undesirable examples, in batch order. */
  rejectedRewards: Float32Array
  /** Per example, weighted, in batch order (TRL lists desirable ones first). */
  losses: Float32Array
}

/**
 * Kahneman–Tversky Optimization on unpaired examples, TRL `KTOTrainer`. With ℓ = log π − log π_ref and
 * z₀ = max(mean_batch(klLogprobs − referenceKlLogprobs), 0) (detached):
 *
 *   kto: desirable λ_D·(1 − σ(β(ℓ − z₀))), undesirable λ_U·(1 − σ(β(z₀ − ℓ)))
 *   apo_zero_unpaired: desirable λ_D·(1 − σ(βℓ)), undesirable λ_U·σ(βℓ)
 *   L = mean over all examples (weights not renormalised)
 */
export function createKtoLoss(options: KtoLossOptions = {}): (inputs: KtoLossInputs) => KtoLossResult {
  const parsed = parseArgument(ktoLossOptionsSchema, options, 'options')
  const { beta, desirableWeight, undesirableWeight, lossType } = parsed
  const caller = lossType
  return (inputs) => {
    const policy = readSequenceValues(inputs.logprobs, 'inputs.logprobs', caller, -1)
    const batch = policy.tensor.shape[0]!
    const reference = readSequenceValues(inputs.referenceLogprobs, 'inputs.referenceLogprobs', caller, batch)
    const labels = readLabels(inputs.labels, caller, batch)
    let kl = 0
    if (lossType === 'kto') {
      for (const key of ['klLogprobs', 'referenceKlLogprobs'] as const) {
        if (inputs[key] === undefined)
          throw new InvalidArgumentError({ argument: `inputs.${key}`, value: undefined, message: `is required by '${caller}' (the reference point)` })
      }
      const klPolicy = readSequenceValues(inputs.klLogprobs, 'inputs.klLogprobs', caller, -1)
      const klReference = readSequenceValues(inputs.referenceKlLogprobs, 'inputs.referenceKlLogprobs', caller, klPolicy.tensor.shape[0]!)
      let total = 0
      klPolicy.data.forEach((value, index) => (total += value - klReference.data[index]!))
      kl = Math.max(total / klPolicy.data.length, 0)
    }
    const loss = tf.tidy(() => {
      const logratios = tf.sub(policy.tensor, reference.tensor) // [batch]
      const desirable = tf.tensor1d(
        labels.map((label) => (label ? 1 : 0)),
        'bool',
      )
      const desirableLosses = lossType === 'kto' ? tf.sub(1, tf.sigmoid(tf.mul(beta, tf.sub(logratios, kl)))) : tf.sub(1, tf.sigmoid(tf.mul(beta, logratios)))
      const undesirableLosses = lossType === 'kto' ? tf.sub(1, tf.sigmoid(tf.mul(beta, tf.sub(kl, logratios)))) : tf.sigmoid(tf.mul(beta, logratios))
      const losses = tf.where(desirable, tf.mul(desirableWeight, desirableLosses), tf.mul(undesirableWeight, undesirableLosses))
      return { loss: tf.mean(losses) as tf.Scalar, losses }
    })
    const losses = Float32Array.from(loss.losses.dataSync())
    loss.losses.dispose()
    const rewards = Float64Array.from(policy.data, (value, index) => beta * (value - reference.data[index]!))
    const chosenRewards = rewards.filter((_, index) => labels[index])
    const rejectedRewards = rewards.filter((_, index) => !labels[index])
    const sum = (values: Float64Array): number => values.reduce((total, value) => total + value, 0)
    return {
      loss: loss.loss,
      metrics: {
        loss: loss.loss.dataSync()[0]!,
        kl,
        rewardsChosenSum: sum(chosenRewards),
        rewardsRejectedSum: sum(rejectedRewards),
        chosenCount: chosenRewards.length,
        rejectedCount: rejectedRewards.length,
      },
      chosenRewards: Float32Array.from(chosenRewards),
      rejectedRewards: Float32Array.from(rejectedRewards),
      losses,
    }
  }
}

function readLabels(value: tf.Tensor | readonly boolean[], caller: string, batch: number): boolean[] {
  if (Array.isArray(value)) {
    if (value.length !== batch || value.some((label) => typeof label !== 'boolean')) {
      throw new InvalidArgumentError({ argument: 'inputs.labels', value, message: `passed to '${caller}' must be ${batch} booleans` })
    }
    return [...value] as boolean[]
  }
  const tensor = requireTensor(value, 'inputs.labels', caller)
  if (tensor.dtype !== 'bool' && tensor.dtype !== 'int32') {
    throw new InvalidArgumentError({ argument: 'inputs.labels', value: tensor.dtype, message: `passed to '${caller}' must have dtype bool or int32 (0/1)` })
  }
  requireShape(tensor, [batch], 'inputs.labels', caller)
  return Array.from(tensor.dataSync() as ArrayLike<number>, (label, index) => {
    if (label !== 0 && label !== 1)
      throw new InvalidArgumentError({ argument: 'inputs.labels', value: label, message: `passed to '${caller}' must hold 0/1 (at [${index}])` })
    return label === 1
  })
}
