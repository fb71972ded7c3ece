import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { stopGradient } from '@ludic/tensors'
import {
  aggregatePolicyLoss,
  aggregationOptionFields,
  applyImportanceWeights,
  clamp,
  clipOptionFields,
  collectPolicyMetrics,
  maskedInputs,
  readPolicyBatch,
  type PolicyLoss,
} from './policy-loss.js'

export const cispoOptionsSchema = z.strictObject({
  ...clipOptionFields,
  ...aggregationOptionFields,
})
export type CispoOptions = z.input<typeof cispoOptionsSchema>

/**
 * Clipped IS-weight Policy Optimization (MiniMax-M1, https://arxiv.org/abs/2506.13585), verl
 * `compute_policy_loss_cispo`: the importance weight is clipped and detached, so every token keeps a
 * REINFORCE gradient (no token is dropped by clipping):
 *
 *   ρ = exp(clamp(log π − log π_old, ±20));  L = −sg(clip(ρ, 1 − ε_low, 1 + ε_high))·A·log π
 *
 * clippedTokens: `high` = ρ > 1 + ε_high; `low` = ρ < 1 − ε_low (whatever the sign of A).
 * clipFraction = tokens with ρ ≠ clip(ρ); clipFractionLower is 0. The paper sets ε_low large (no lower bound).
 */
export function createCispoLoss(options: CispoOptions = {}): PolicyLoss {
  const parsed = parseArgument(cispoOptionsSchema, options, 'options')
  const { clipLow, clipHigh } = parsed
  return (inputs) => {
    const batch = readPolicyBatch(inputs, 'cispo')
    const loss = tf.tidy(() => {
      const { logprobs, oldLogprobs, advantages, mask } = maskedInputs(batch)
      const ratio = tf.exp(tf.clipByValue(tf.sub(logprobs, oldLogprobs), -20, 20))
      const clippedRatio = stopGradient(tf.clipByValue(ratio, 1 - clipLow, 1 + clipHigh))
      const pgLosses = tf.neg(tf.mul(tf.mul(clippedRatio, advantages), logprobs)) // [batch, tokens]
      return aggregatePolicyLoss(applyImportanceWeights(pgLosses, batch, mask), batch, parsed.aggregation, parsed)
    })
    const { logprobs, oldLogprobs } = batch.data
    const result = collectPolicyMetrics(batch, loss, true, (index) => {
      const ratio = Math.exp(clamp(logprobs[index]! - oldLogprobs[index]!, -20, 20))
      return { clipped: ratio !== clamp(ratio, 1 - clipLow, 1 + clipHigh), high: ratio > 1 + clipHigh, low: ratio < 1 - clipLow }
    })
    return { loss, ...result }
  }
}
