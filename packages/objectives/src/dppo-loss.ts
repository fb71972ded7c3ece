import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { constantOf, stopGradient } from '@ludic/tensors'
import { aggregationOptionFields, applyImportanceWeights, checkPolicyInputs, runPolicyLoss, type PolicyLoss } from './policy-loss.js'

export const dppoOptionsSchema = z.strictObject({
  /** Divergence threshold δ_low for tokens with A ≤ 0 (verl reuses clip_ratio_low). Default 0.2. */
  clipLow: z.number().nonnegative().default(0.2),
  /** Divergence threshold δ_high for tokens with A > 0 (verl reuses clip_ratio_high). Default 0.2. */
  clipHigh: z.number().nonnegative().default(0.2),
  /**
   * Truncation of the importance ratio, min(ρ, c) (truncated IS instead of dual clip). Default 3: verl reads
   * `clip_ratio_c` whose actor default is 3 (its code falls back to 20, which the paper recommends).
   */
  clipC: z.number().positive().default(3),
  ...aggregationOptionFields,
})
export type DppoOptions = z.input<typeof dppoOptionsSchema>

/** Which divergence between the old and new token probabilities bounds the update. */
export type DppoDivergence = 'tv' | 'kl'

/**
 * Divergence PPO, binary variants (https://arxiv.org/abs/2602.04879), verl `dppo_tv` / `dppo_kl`: instead
 * of clipping the ratio, tokens whose probability moved too far (in the favourable direction) are masked,
 * and the ratio weight is truncated and detached:
 *
 *   p = π(token), p_old = π_old(token);  ρ = exp(clamp(log π − log π_old, ±20))
 *   tv: valid = p − p_old ≤ δ_high if A > 0, p − p_old ≥ −δ_low otherwise
 *   kl: D = p_old·log(p_old/p) + (1 − p_old)·log((1 − p_old + 1e-8)/(1 − p + 1e-8))
 *       valid = D ≤ δ_high or p ≤ p_old if A > 0;  D ≤ δ_low or p ≥ p_old otherwise
 *   L = −A·sg(min(ρ, c))·log π·valid
 *
 * clippedTokens: `high` = masked with A > 0, `low` = masked with A ≤ 0. clipFraction = masked tokens;
 * clipFractionLower = valid tokens whose ratio was truncated (ρ > c).
 * The valid mask (no gradient) is computed in float32 on the device, as verl computes it (it was computed in
 * float64 from values read off the device until the metrics moved to tensors).
 */
export function createDppoLoss(divergence: DppoDivergence, options: DppoOptions = {}): PolicyLoss {
  const parsed = parseArgument(dppoOptionsSchema, options, 'options')
  const { clipLow, clipHigh, clipC } = parsed
  const caller = `dppo-${divergence}`
  return (inputs) => {
    const batch = checkPolicyInputs(inputs, caller)
    return runPolicyLoss(batch, ({ logprobs, oldLogprobs, advantages, mask, aggregate }) => {
      const positive = tf.greater(advantages, 0)
      // The tokens the update may move: a constant for the gradient, as verl computes it under no_grad.
      const validMask = constantOf(() => {
        const probability = tf.exp(logprobs)
        const oldProbability = tf.exp(oldLogprobs)
        if (divergence === 'tv') {
          const change = tf.sub(probability, oldProbability)
          return tf.cast(choose(positive, tf.lessEqual(change, clipHigh), tf.greaterEqual(change, -clipLow)), 'float32')
        }
        const binaryKl = tf.add(
          tf.mul(oldProbability, tf.sub(oldLogprobs, logprobs)),
          tf.mul(tf.sub(1, oldProbability), tf.log(tf.div(tf.add(tf.sub(1, oldProbability), 1e-8), tf.add(tf.sub(1, probability), 1e-8)))),
        )
        const validPositive = tf.logicalOr(tf.lessEqual(binaryKl, clipHigh), tf.lessEqual(probability, oldProbability))
        const validNegative = tf.logicalOr(tf.lessEqual(binaryKl, clipLow), tf.greaterEqual(probability, oldProbability))
        return tf.cast(choose(positive, validPositive, validNegative), 'float32')
      }, mask)
      const ratio = tf.exp(tf.clipByValue(tf.sub(logprobs, oldLogprobs), -20, 20))
      const truncatedRatio = stopGradient(tf.minimum(ratio, clipC))
      const pgLosses = tf.mul(tf.neg(tf.mul(tf.mul(advantages, truncatedRatio), logprobs)), validMask) // [batch, tokens]
      const loss = aggregate(applyImportanceWeights(pgLosses, batch, mask), parsed.aggregation, parsed)
      const dropped = tf.equal(validMask, 0)
      return {
        loss,
        ratio,
        clipped: dropped,
        clippedLower: tf.logicalAnd(tf.logicalNot(dropped), tf.greater(ratio, clipC)),
        high: tf.logicalAnd(dropped, positive),
        low: tf.logicalAnd(dropped, tf.logicalNot(positive)),
      }
    })
  }
}

/** `where(condition, ifTrue, ifFalse)` on bool tensors with logical ops (the wasm backend's where mishandles bool branches). */
function choose(condition: tf.Tensor, ifTrue: tf.Tensor, ifFalse: tf.Tensor): tf.Tensor {
  return tf.logicalOr(tf.logicalAnd(condition, ifTrue), tf.logicalAnd(tf.logicalNot(condition), ifFalse))
}
