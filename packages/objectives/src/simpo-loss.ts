import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { logSigmoid } from './log-sigmoid.js'
import { parseArgument } from '@ludic/core'
import { mean, readLengths, readSequenceValues } from './sequence-inputs.js'

export const simpoLossOptionsSchema = z.strictObject({
  /** β, the reward scale. Default 2 (the paper uses 2–2.5). */
  beta: z.number().positive().default(2),
  /** γ, the target reward margin (TRL `simpo_gamma`). Default 1 (the paper's γ/β ≈ 0.5). */
  gamma: z.number().default(1),
  /** ε, label smoothing as in TRL's CPO trainer. Default 0. */
  labelSmoothing: z.number().min(0).lt(0.5).default(0),
})
export type SimpoLossOptions = z.input<typeof simpoLossOptionsSchema>

export interface SimpoLossInputs {
  /** `[batch]` float32: log π(y_c), summed over the completion. Differentiated. */
  chosenLogprobs: tf.Tensor
  rejectedLogprobs: tf.Tensor
  /** `[batch]` int32 or float32: completion token counts (> 0). */
  chosenLengths: tf.Tensor
  rejectedLengths: tf.Tensor
}

/**
 * SimPO (Meng et al. 2024, https://arxiv.org/abs/2405.14734), reference-free and length-normalised, as TRL's
 * CPO trainer with `loss_type="simpo"`:
 *
 *   r = β·log π(y)/|y|;  L = −(1 − ε)·log σ(r_c − r_r − γ) − ε·log σ(−(r_c − r_r − γ))
 *
 * metrics as TRL: rewards β·log π(y)/|y|, their accuracy and margin.
 */
export function createSimpoLoss(options: SimpoLossOptions = {}): (inputs: SimpoLossInputs) => {
  loss: tf.Scalar
  metrics: { loss: number; rewardsChosen: number; rewardsRejected: number; rewardsAccuracy: number; rewardsMargin: number }
} {
  const { beta, gamma, labelSmoothing } = parseArgument(simpoLossOptionsSchema, options, 'options')
  const caller = 'simpo'
  return (inputs) => {
    const chosen = readSequenceValues(inputs.chosenLogprobs, 'inputs.chosenLogprobs', caller, -1)
    const batch = chosen.tensor.shape[0]!
    const rejected = readSequenceValues(inputs.rejectedLogprobs, 'inputs.rejectedLogprobs', caller, batch)
    const chosenLengths = readLengths(inputs.chosenLengths, 'inputs.chosenLengths', caller, batch, { positive: true })
    const rejectedLengths = readLengths(inputs.rejectedLengths, 'inputs.rejectedLengths', caller, batch, { positive: true })
    const loss = tf.tidy(() => {
      const chosenRewards = tf.mul(beta, tf.div(chosen.tensor, tf.tensor1d(chosenLengths))) // [batch]
      const rejectedRewards = tf.mul(beta, tf.div(rejected.tensor, tf.tensor1d(rejectedLengths)))
      const logits = tf.sub(tf.sub(chosenRewards, rejectedRewards), gamma)
      const losses = tf.sub(tf.mul(tf.neg(logSigmoid(logits)), 1 - labelSmoothing), tf.mul(logSigmoid(tf.neg(logits)), labelSmoothing))
      return tf.mean(losses) as tf.Scalar
    })
    const chosenRewards = Array.from(chosen.data, (value, index) => (beta * value) / chosenLengths[index]!)
    const rejectedRewards = Array.from(rejected.data, (value, index) => (beta * value) / rejectedLengths[index]!)
    return {
      loss,
      metrics: {
        loss: loss.dataSync()[0]!,
        rewardsChosen: mean(chosenRewards),
        rewardsRejected: mean(rejectedRewards),
        rewardsAccuracy: mean(chosenRewards.map((reward, index) => (reward > rejectedRewards[index]! ? 1 : 0))),
        rewardsMargin: mean(chosenRewards.map((reward, index) => reward - rejectedRewards[index]!)),
      },
    }
  }
}
