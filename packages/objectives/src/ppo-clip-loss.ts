import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import {
  aggregatePolicyLoss,
  aggregationOptionFields,
  applyImportanceWeights,
  clamp,
  clipOptionFields,
  collectPolicyMetrics,
  maskedInputs,
  readPolicyBatch,
  type PolicyBatch,
  type PolicyLoss,
  type PolicyLossResult,
} from './policy-loss.js'

export const ppoClipOptionsSchema = z.strictObject({
  ...clipOptionFields,
  /**
   * Dual-clip constant c (Ye et al. 2020, https://arxiv.org/abs/1912.09729): for A < 0 the loss is at most
   * −A·c, so a huge ratio on a bad token cannot blow up the update. Must be > 1. Default 3 (verl).
   */
  clipC: z.number().gt(1, { message: 'the dual-clip constant clipC must be greater than 1' }).default(3),
  ...aggregationOptionFields,
})
export type PpoClipOptions = z.input<typeof ppoClipOptionsSchema>

/**
 * PPO clipped surrogate with asymmetric clipping and dual clip: verl `compute_policy_loss_vanilla`
 * (Schulman et al. 2017, https://arxiv.org/abs/1707.06347; clip-higher from DAPO, https://arxiv.org/abs/2503.14476).
 *
 *   ρ = exp(clamp(log π − log π_old, ±20))
 *   L = max(−A·ρ, −A·clip(ρ, 1 − ε_low, 1 + ε_high)), then for A < 0: min(L, −A·c)
 *
 * clippedTokens: `high` = A > 0 and ρ > 1 + ε_high; `low` = A < 0 and ρ < 1 − ε_low.
 * clipFraction = tokens where the clipped term is active; clipFractionLower = tokens where the dual clip is.
 */
export function createPpoClipLoss(options: PpoClipOptions = {}): PolicyLoss {
  const parsed = parseArgument(ppoClipOptionsSchema, options, 'options')
  return (inputs) => ppoClipLoss(readPolicyBatch(inputs, 'ppo-clip'), parsed)
}

/** The loss on a checked batch (shared with `truncated-ppo`). */
export function ppoClipLoss(batch: PolicyBatch, options: z.output<typeof ppoClipOptionsSchema>): PolicyLossResult {
  const { clipLow, clipHigh, clipC } = options
  const loss = tf.tidy(() => {
    const { logprobs, oldLogprobs, advantages, mask } = maskedInputs(batch)
    const negativeApproxKl = tf.clipByValue(tf.sub(logprobs, oldLogprobs), -20, 20)
    const ratio = tf.exp(negativeApproxKl)
    const pgLosses1 = tf.neg(tf.mul(advantages, ratio))
    const pgLosses2 = tf.neg(tf.mul(advantages, tf.clipByValue(ratio, 1 - clipLow, 1 + clipHigh)))
    const clipPgLosses1 = tf.maximum(pgLosses1, pgLosses2)
    const pgLosses3 = tf.neg(tf.mul(advantages, clipC))
    const clipPgLosses2 = tf.minimum(pgLosses3, clipPgLosses1)
    const pgLosses = tf.where(tf.less(advantages, 0), clipPgLosses2, clipPgLosses1) // [batch, tokens]
    return aggregatePolicyLoss(applyImportanceWeights(pgLosses, batch, mask), batch, options.aggregation, options)
  })
  const { logprobs, oldLogprobs, advantages } = batch.data
  const result = collectPolicyMetrics(batch, loss, true, (index) => {
    const advantage = advantages[index]!
    const ratio = Math.exp(clamp(logprobs[index]! - oldLogprobs[index]!, -20, 20))
    const pgLoss1 = -advantage * ratio
    const pgLoss2 = -advantage * clamp(ratio, 1 - clipLow, 1 + clipHigh)
    const clipped = pgLoss2 > pgLoss1
    return {
      clipped,
      clippedLower: Math.max(pgLoss1, pgLoss2) > -advantage * clipC && advantage < 0,
      high: clipped && advantage > 0,
      low: clipped && advantage < 0,
    }
  })
  return { loss, ...result }
}
