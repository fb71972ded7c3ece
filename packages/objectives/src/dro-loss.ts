import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { aggregationOptionFields, applyImportanceWeights, checkPolicyInputs, runPolicyLoss, type PolicyLoss } from './policy-loss.js'

export const droOptionsSchema = z.strictObject({
  /** β of the quadratic penalty on the log-ratio (verl `policy_loss.dro_beta`). Must be > 0. Default 0.1. */
  beta: z.number().positive().default(0.1),
  ...aggregationOptionFields,
})
export type DroOptions = z.input<typeof droOptionsSchema>

/**
 * Direct Reward Optimization (Richemond et al. 2024, https://arxiv.org/abs/2405.19107), verl `dro`:
 * a policy gradient with a quadratic penalty that keeps π near π_old instead of a clip:
 *
 *   L = −(A·log π − ½·β·(log π − log π_old)²)          (log-ratio not clamped)
 *
 * approxKl uses the unclamped log-ratio; the clip metrics are 0.
 */
export function createDroLoss(options: DroOptions = {}): PolicyLoss {
  const parsed = parseArgument(droOptionsSchema, options, 'options')
  return (inputs) => {
    const batch = checkPolicyInputs(inputs, 'dro')
    return runPolicyLoss(batch, ({ logprobs, oldLogprobs, advantages, mask, aggregate }) => {
      const logRatio = tf.sub(logprobs, oldLogprobs)
      const pgLosses = tf.neg(tf.sub(tf.mul(logprobs, advantages), tf.mul(0.5 * parsed.beta, tf.square(logRatio)))) // [batch, tokens]
      return { loss: aggregate(applyImportanceWeights(pgLosses, batch, mask), parsed.aggregation, parsed), logRatio }
    })
  }
}
