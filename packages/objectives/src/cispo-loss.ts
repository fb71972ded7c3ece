import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { stopGradient } from '@ludic/tensors'
import { aggregationOptionFields, applyImportanceWeights, checkPolicyInputs, clipOptionFields, runPolicyLoss, type PolicyLoss } from './policy-loss.js'

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
    const batch = checkPolicyInputs(inputs, 'cispo')
    return runPolicyLoss(batch, ({ logprobs, oldLogprobs, advantages, mask, aggregate }) => {
      const logRatio = tf.clipByValue(tf.sub(logprobs, oldLogprobs), -20, 20)
      const ratio = tf.exp(logRatio)
      const ratioClipped = tf.clipByValue(ratio, 1 - clipLow, 1 + clipHigh)
      const clippedRatio = stopGradient(ratioClipped)
      const pgLosses = tf.neg(tf.mul(tf.mul(clippedRatio, advantages), logprobs)) // [batch, tokens]
      const loss = aggregate(applyImportanceWeights(pgLosses, batch, mask), parsed.aggregation, parsed)
      // Where the clip above moved the ratio.
      const high = tf.greater(ratio, ratioClipped)
      const low = tf.less(ratio, ratioClipped)
      return { loss, logRatio, ratio, clipped: tf.logicalOr(high, low), high, low }
    })
  }
}
