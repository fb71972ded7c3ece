import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { applyImportanceWeights, checkPolicyInputs, runPolicyLoss, type PolicyLoss } from './policy-loss.js'

export const sapoOptionsSchema = z.strictObject({
  /** Temperature τ of the gate for tokens with A > 0. Default 1 (verl). */
  tauPositive: z.number().positive().default(1),
  /** Temperature τ of the gate for tokens with A ≤ 0. Default 1.05 (verl). */
  tauNegative: z.number().positive().default(1.05),
  /** SAPO always aggregates `seq-mean-token-mean` (verl ignores `loss_agg_mode` here); only that value is accepted. */
  aggregation: z.literal('seq-mean-token-mean').default('seq-mean-token-mean'),
  /** verl `dp_size`. Default 1. */
  dataParallelSize: z.number().int().positive().default(1),
})
export type SapoOptions = z.input<typeof sapoOptionsSchema>

/**
 * Soft Adaptive Policy Optimization (Qwen, https://arxiv.org/abs/2511.20347), verl `compute_policy_loss_sapo`:
 * a smooth sigmoid gate instead of a hard clip, with a steeper temperature for negative advantages.
 *
 *   ρ = exp(clamp(log π − log π_old, ±20));  τ = τ_pos if A > 0 else τ_neg
 *   L = −(4/τ)·σ(τ·(ρ − 1))·A, aggregated seq-mean-token-mean
 *
 * Nothing is clipped: the clip metrics are 0.
 */
export function createSapoLoss(options: SapoOptions = {}): PolicyLoss {
  const parsed = parseArgument(sapoOptionsSchema, options, 'options')
  return (inputs) => {
    const batch = checkPolicyInputs(inputs, 'sapo')
    return runPolicyLoss(batch, ({ logprobs, oldLogprobs, advantages, mask, aggregate }) => {
      const logRatio = tf.clipByValue(tf.sub(logprobs, oldLogprobs), -20, 20)
      const ratio = tf.exp(logRatio)
      const taus = tf.where(tf.greater(advantages, 0), tf.fill(ratio.shape, parsed.tauPositive), tf.fill(ratio.shape, parsed.tauNegative))
      const gates = tf.div(tf.mul(tf.sigmoid(tf.mul(taus, tf.sub(ratio, 1))), 4), taus)
      const pgLosses = tf.neg(tf.mul(gates, advantages)) // [batch, tokens]
      return { loss: aggregate(applyImportanceWeights(pgLosses, batch, mask), 'seq-mean-token-mean', parsed), logRatio, ratio }
    })
  }
}
