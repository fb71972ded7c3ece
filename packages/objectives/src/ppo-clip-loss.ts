import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import {
  aggregationOptionFields,
  applyImportanceWeights,
  checkPolicyInputs,
  clipOptionFields,
  runPolicyLoss,
  type PolicyBatch,
  type PolicyLoss,
  type PolicyLossResult,
} from './policy-loss.js'

export const ppoClipOptionsSchema = z.strictObject({
  ...clipOptionFields,
  /** ε_low, at most 1 (the ratio's lower bound 1 − ε_low is not negative: a ratio is). Default 0.2. */
  clipLow: z.number().min(0).max(1).default(0.2),
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
 * clipFraction = tokens where the clipped term is active; clipFractionLower = tokens where the dual clip is
 * (both read off the maximum and minimum that computed the loss).
 */
export function createPpoClipLoss(options: PpoClipOptions = {}): PolicyLoss {
  const parsed = parseArgument(ppoClipOptionsSchema, options, 'options')
  return (inputs) => ppoClipLoss(checkPolicyInputs(inputs, 'ppo-clip'), parsed)
}

/** The loss on a checked batch (shared with `truncated-ppo`). */
export function ppoClipLoss(batch: PolicyBatch, options: z.output<typeof ppoClipOptionsSchema>): PolicyLossResult {
  const { clipLow, clipHigh, clipC } = options
  return runPolicyLoss(batch, ({ logprobs, oldLogprobs, advantages, mask, aggregate }) => {
    const negativeApproxKl = tf.clipByValue(tf.sub(logprobs, oldLogprobs), -20, 20)
    const ratio = tf.exp(negativeApproxKl)
    const pgLosses1 = tf.neg(tf.mul(advantages, ratio))
    const pgLosses2 = tf.neg(tf.mul(advantages, tf.clipByValue(ratio, 1 - clipLow, 1 + clipHigh)))
    const clipPgLosses1 = tf.maximum(pgLosses1, pgLosses2)
    const pgLosses3 = tf.neg(tf.mul(advantages, clipC))
    const clipPgLosses2 = tf.minimum(pgLosses3, clipPgLosses1)
    const negative = tf.less(advantages, 0)
    const pgLosses = tf.where(negative, clipPgLosses2, clipPgLosses1) // [batch, tokens]
    const loss = aggregate(applyImportanceWeights(pgLosses, batch, mask), options.aggregation, options)
    // The clipping decisions of the maximum and the dual-clip minimum above.
    const clipped = tf.greater(pgLosses2, pgLosses1)
    return {
      loss,
      logRatio: negativeApproxKl,
      ratio,
      clipped,
      clippedLower: tf.logicalAnd(tf.greater(clipPgLosses1, pgLosses3), negative),
      high: tf.logicalAnd(clipped, tf.greater(advantages, 0)),
      low: tf.logicalAnd(clipped, negative),
    }
  })
}
