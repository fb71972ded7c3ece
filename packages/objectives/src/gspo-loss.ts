import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { stopGradient } from '@ludic/tensors'
import { aggregatePolicyLoss, applyImportanceWeights, clipOptionFields, collectPolicyMetrics, maskedInputs, readPolicyBatch, type PolicyLoss } from './policy-loss.js'

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
    const batch = readPolicyBatch(inputs, 'gspo')
    const { batch: rows, tokens, rowCounts } = batch.counts
    const loss = tf.tidy(() => {
      const { logprobs, oldLogprobs, advantages, mask } = maskedInputs(batch)
      const negativeApproxKl = tf.sub(logprobs, oldLogprobs) // [batch, tokens], masked positions 0
      const sequenceLengths = tf.tensor2d(Float32Array.from(rowCounts, (count) => Math.max(count, 1)), [rows, 1])
      const negativeApproxKlSequence = tf.div(tf.sum(negativeApproxKl, -1, true), sequenceLengths) // [batch, 1]
      const logSequenceRatio = tf.minimum(tf.add(tf.sub(logprobs, stopGradient(logprobs)), stopGradient(negativeApproxKlSequence)), 10)
      const sequenceRatio = tf.exp(logSequenceRatio) // [batch, tokens]
      const pgLosses1 = tf.neg(tf.mul(advantages, sequenceRatio))
      const pgLosses2 = tf.neg(tf.mul(advantages, tf.clipByValue(sequenceRatio, 1 - clipLow, 1 + clipHigh)))
      const pgLosses = tf.maximum(pgLosses1, pgLosses2)
      return aggregatePolicyLoss(applyImportanceWeights(pgLosses, batch, mask), batch, 'seq-mean-token-mean', parsed)
    })
    // The sequence ratios in float64, for the metrics.
    const { logprobs, oldLogprobs, advantages, mask } = batch.data
    const sequenceRatios = new Float64Array(rows)
    for (let row = 0; row < rows; row++) {
      let total = 0
      for (let column = 0; column < tokens; column++) {
        const index = row * tokens + column
        if (mask[index] !== 0) total += logprobs[index]! - oldLogprobs[index]!
      }
      sequenceRatios[row] = Math.exp(Math.min(total / Math.max(rowCounts[row]!, 1), 10))
    }
    const result = collectPolicyMetrics(batch, loss, false, (index) => {
      const advantage = advantages[index]!
      const ratio = sequenceRatios[Math.floor(index / tokens)]!
      const pgLoss1 = -advantage * ratio
      const pgLoss2 = -advantage * Math.min(Math.max(ratio, 1 - clipLow), 1 + clipHigh)
      const clipped = pgLoss2 > pgLoss1
      return { clipped, high: clipped && advantage > 0, low: clipped && advantage < 0 }
    })
    return { loss, ...result }
  }
}
