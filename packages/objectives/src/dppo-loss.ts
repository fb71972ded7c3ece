import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { stopGradient } from '@ludic/tensors'
import {
  aggregatePolicyLoss,
  aggregationOptionFields,
  applyImportanceWeights,
  clamp,
  collectPolicyMetrics,
  maskedInputs,
  readPolicyBatch,
  type PolicyLoss,
} from './policy-loss.js'

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
 * The valid mask (no gradient) is computed in float64 from the inputs.
 */
export function createDppoLoss(divergence: DppoDivergence, options: DppoOptions = {}): PolicyLoss {
  const parsed = parseArgument(dppoOptionsSchema, options, 'options')
  const { clipLow, clipHigh, clipC } = parsed
  const caller = `dppo-${divergence}`
  return (inputs) => {
    const batch = readPolicyBatch(inputs, caller)
    const { logprobs, oldLogprobs, advantages, mask } = batch.data
    const valid = new Float32Array(mask.length)
    for (let index = 0; index < mask.length; index++) {
      const probability = Math.exp(logprobs[index]!)
      const oldProbability = Math.exp(oldLogprobs[index]!)
      const positive = advantages[index]! > 0
      if (divergence === 'tv') {
        const change = probability - oldProbability
        valid[index] = (positive ? change <= clipHigh : change >= -clipLow) ? 1 : 0
      } else {
        const binaryKl =
          oldProbability * (oldLogprobs[index]! - logprobs[index]!) + (1 - oldProbability) * Math.log((1 - oldProbability + 1e-8) / (1 - probability + 1e-8))
        valid[index] = (positive ? binaryKl <= clipHigh || probability <= oldProbability : binaryKl <= clipLow || probability >= oldProbability) ? 1 : 0
      }
    }
    const loss = tf.tidy(() => {
      const { logprobs: logprobsTensor, oldLogprobs: oldLogprobsTensor, advantages: advantagesTensor, mask: maskTensor } = maskedInputs(batch)
      const ratio = tf.exp(tf.clipByValue(tf.sub(logprobsTensor, oldLogprobsTensor), -20, 20))
      const truncatedRatio = stopGradient(tf.minimum(ratio, clipC))
      const validMask = tf.tensor(valid, logprobsTensor.shape)
      const pgLosses = tf.mul(tf.neg(tf.mul(tf.mul(advantagesTensor, truncatedRatio), logprobsTensor)), validMask) // [batch, tokens]
      return aggregatePolicyLoss(applyImportanceWeights(pgLosses, batch, maskTensor), batch, parsed.aggregation, parsed)
    })
    const result = collectPolicyMetrics(batch, loss, true, (index) => {
      const isValid = valid[index] === 1
      const ratio = Math.exp(clamp(logprobs[index]! - oldLogprobs[index]!, -20, 20))
      const positive = advantages[index]! > 0
      return { clipped: !isValid, clippedLower: isValid && ratio > clipC, high: !isValid && positive, low: !isValid && !positive }
    })
    return { loss, ...result }
  }
}
