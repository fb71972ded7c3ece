import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { stopGradient } from '@ludic/tensors'
import { applyImportanceWeights, checkPolicyInputs, clipOptionFields, runPolicyLoss, type PolicyLoss } from './policy-loss.js'

export const gspoOptionsSchema = z.strictObject({
  ...clipOptionFields,
  /** GSPO always aggregates `seq-mean-token-mean` (verl ignores `loss_agg_mode` here); only that value is accepted. */
  aggregation: z.literal('seq-mean-token-mean').default('seq-mean-token-mean'),
  /** verl `dp_size`. Default 1. */
  dataParallelSize: z.number().int().positive().default(1),
})
export type GspoOptions = z.input<typeof gspoOptionsSchema>

/**
 * Group Sequence Policy Optimization (Zheng et al. 2025, https://arxiv.org/abs/2507.18071), token form as
 * verl `compute_policy_loss_gspo`:
 *
 *   s_i = exp(Σ_t (log π − log π_old)·mask / max(|y_i|, 1))                (sequence ratio, no ±20 clamp)
 *   s_i,t = exp(min(log π − sg(log π) + sg(log s_i), 10))               (value s_i, gradient ∇log π_t)
 *   L = max(−A·s_i,t, −A·clip(s_i,t, 1 − ε_low, 1 + ε_high)), aggregated seq-mean-token-mean
 *
 * clippedTokens: `high` = A > 0 and s_i > 1 + ε_high; `low` = A < 0 and s_i < 1 − ε_low (per token, as A).
 * approxKl uses the unclamped log-ratio; clipFractionLower is 0.
 */
export function createGspoLoss(options: GspoOptions = {}): PolicyLoss {
  const parsed = parseArgument(gspoOptionsSchema, options, 'options')
  const { clipLow, clipHigh } = parsed
  return (inputs) => {
    const batch = checkPolicyInputs(inputs, 'gspo')
    return runPolicyLoss(batch, ({ logprobs, oldLogprobs, advantages, mask, aggregate }) => {
      const negativeApproxKl = tf.sub(logprobs, oldLogprobs) // [batch, tokens], masked positions 0
      const sequenceLengths = tf.maximum(tf.sum(mask, -1, true), 1) // [batch, 1]
      const negativeApproxKlSequence = tf.div(tf.sum(negativeApproxKl, -1, true), sequenceLengths) // [batch, 1]
      const logSequenceRatio = tf.minimum(tf.add(tf.sub(logprobs, stopGradient(logprobs)), stopGradient(negativeApproxKlSequence)), 10)
      const sequenceRatio = tf.exp(logSequenceRatio) // [batch, tokens]
      const pgLosses1 = tf.neg(tf.mul(advantages, sequenceRatio))
      const pgLosses2 = tf.neg(tf.mul(advantages, tf.clipByValue(sequenceRatio, 1 - clipLow, 1 + clipHigh)))
      const pgLosses = tf.maximum(pgLosses1, pgLosses2)
      const loss = aggregate(applyImportanceWeights(pgLosses, batch, mask), 'seq-mean-token-mean', parsed)
      // The clipping decision of the maximum above.
      const clipped = tf.greater(pgLosses2, pgLosses1)
      return {
        loss,
        logRatio: negativeApproxKl,
        clipped,
        high: tf.logicalAnd(clipped, tf.greater(advantages, 0)),
        low: tf.logicalAnd(clipped, tf.less(advantages, 0)),
      }
    })
  }
}
