import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { checkPolicyInputs, clipOptionFields, runPolicyLoss, type PolicyLoss } from './policy-loss.js'
import { zeroMasked } from './tensor-checks.js'

export const gmpoOptionsSchema = z.strictObject({
  /** Clip range of the token log-ratio: [−clipLow, clipHigh] (verl reuses clip_ratio_low/high; the paper uses 0.4). Default 0.2 each. */
  ...clipOptionFields,
})
export type GmpoOptions = z.input<typeof gmpoOptionsSchema>

/**
 * Geometric-Mean Policy Optimization (Zhao et al. 2025, https://arxiv.org/abs/2507.20673), verl `geo_mean`:
 * the sequence ratio is the geometric mean of token ratios clipped in log space, which is less sensitive
 * to outlier tokens than GRPO's arithmetic mean.
 *
 *   d = log π − log π_old (not clamped);  d' = sign(A)·min(sign(A)·d, sign(A)·clamp(d, −ε_low, ε_high))
 *   r_i = exp(Σ_t d'·mask / (|y_i| + 1e-8));  A_i = Σ_t A·mask / (|y_i| + 1e-8)
 *   L = mean_i(−A_i·r_i)          over ALL rows (plain mean: no aggregation mode, fully masked rows count as 0)
 *
 * `importanceWeights` multiply each sequence's loss by their geometric mean over its valid tokens.
 * clippedTokens: `high` = A > 0 and d > ε_high; `low` = A < 0 and d < −ε_low. clipFraction /
 * clipFractionLower are verl's: tokens with d outside the range and A > 0 / A < 0.
 */
export function createGmpoLoss(options: GmpoOptions = {}): PolicyLoss {
  const parsed = parseArgument(gmpoOptionsSchema, options, 'options')
  const { clipLow, clipHigh } = parsed
  return (inputs) => {
    const batch = checkPolicyInputs(inputs, 'gmpo')
    const rows = batch.logprobs.shape[0]!
    return runPolicyLoss(batch, ({ logprobs, oldLogprobs, advantages, mask }) => {
      const negativeApproxKl = tf.sub(logprobs, oldLogprobs)
      const advantageSign = tf.sign(advantages)
      const negativeApproxKlClamped = tf.clipByValue(negativeApproxKl, -clipLow, clipHigh)
      const negativeApproxKlMin = tf.mul(advantageSign, tf.minimum(tf.mul(advantageSign, negativeApproxKl), tf.mul(advantageSign, negativeApproxKlClamped)))
      const lengths = tf.add(tf.sum(mask, -1), 1e-8) // [batch]
      const sequenceRatio = tf.exp(tf.div(tf.sum(tf.mul(negativeApproxKlMin, mask), -1), lengths)) // [batch]
      const sequenceAdvantage = tf.div(tf.sum(tf.mul(advantages, mask), -1), lengths) // [batch]
      let pgLosses = tf.neg(tf.mul(sequenceAdvantage, sequenceRatio)) // [batch]
      if (batch.importanceWeights !== undefined) {
        const logWeights = tf.mul(tf.log(tf.add(zeroMasked(batch.importanceWeights, mask), 1e-10)), mask) // [batch, tokens]
        pgLosses = tf.mul(pgLosses, tf.exp(tf.div(tf.sum(logWeights, -1), lengths)))
      }
      // Where the clamp above moved the log-ratio.
      const above = tf.greater(negativeApproxKl, negativeApproxKlClamped)
      const below = tf.less(negativeApproxKl, negativeApproxKlClamped)
      const outside = tf.logicalOr(above, below)
      const positive = tf.greater(advantages, 0)
      const negative = tf.less(advantages, 0)
      return {
        loss: tf.div(tf.sum(pgLosses), rows) as tf.Scalar,
        logRatio: negativeApproxKl,
        clipped: tf.logicalAnd(outside, positive),
        clippedLower: tf.logicalAnd(outside, negative),
        high: tf.logicalAnd(above, positive),
        low: tf.logicalAnd(below, negative),
      }
    })
  }
}
