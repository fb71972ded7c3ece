import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { logSigmoid } from './log-sigmoid.js'
import { parseArgument } from '@ludic/core'
import { mean, readSequenceValues } from './sequence-inputs.js'

export const bradleyTerryLossOptionsSchema = z.strictObject({
  /**
   * c of the centring penalty c·mean((r_c + r_r)²), which keeps rewards near zero (TRL
   * `center_rewards_coefficient`; Eisenstein et al. 2023). Default: none.
   */
  centerRewardsCoefficient: z.number().nonnegative().nullable().optional(),
})
export type BradleyTerryLossOptions = z.input<typeof bradleyTerryLossOptionsSchema>

export interface BradleyTerryLossInputs {
  /** `[batch]` float32: reward-model scores of the chosen responses. Differentiated. */
  rewardsChosen: tf.Tensor
  /** `[batch]` float32: scores of the rejected responses. Differentiated. */
  rewardsRejected: tf.Tensor
  /** `[batch]` float32, optional: the margin m by which chosen should win (Llama 2). */
  margin?: tf.Tensor
}

/**
 * Bradley–Terry reward-model loss, TRL `RewardTrainer.compute_loss`:
 *
 *   L = mean(−log σ(r_c − r_r − m)) + c·mean((r_c + r_r)²)
 *
 * metrics: `accuracy` = mean(r_c > r_r), `margin` = mean(r_c − r_r) (m not subtracted), `loss`.
 */
export function createBradleyTerryLoss(options: BradleyTerryLossOptions = {}): (inputs: BradleyTerryLossInputs) => {
  loss: tf.Scalar
  metrics: { loss: number; accuracy: number; margin: number }
} {
  const coefficient = parseArgument(bradleyTerryLossOptionsSchema, options, 'options').centerRewardsCoefficient ?? undefined
  const caller = 'bradley-terry'
  return (inputs) => {
    const chosen = readSequenceValues(inputs.rewardsChosen, 'inputs.rewardsChosen', caller, -1)
    const batch = chosen.tensor.shape[0]!
    const rejected = readSequenceValues(inputs.rewardsRejected, 'inputs.rewardsRejected', caller, batch)
    const margin = inputs.margin === undefined ? undefined : readSequenceValues(inputs.margin, 'inputs.margin', caller, batch)
    const loss = tf.tidy(() => {
      let logits = tf.sub(chosen.tensor, rejected.tensor) // [batch]
      if (margin !== undefined) logits = tf.sub(logits, margin.tensor)
      let total = tf.mean(tf.neg(logSigmoid(logits)))
      if (coefficient !== undefined) total = tf.add(total, tf.mul(coefficient, tf.mean(tf.square(tf.add(chosen.tensor, rejected.tensor)))))
      return total as tf.Scalar
    })
    return {
      loss,
      metrics: {
        loss: loss.dataSync()[0]!,
        accuracy: mean(Array.from(chosen.data, (value, index) => (value > rejected.data[index]! ? 1 : 0))),
        margin: mean(Array.from(chosen.data, (value, index) => value - rejected.data[index]!)),
      },
    }
  }
}
