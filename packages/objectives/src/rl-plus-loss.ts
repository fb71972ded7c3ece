import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { misRatio, multipleImportanceSamplingOptionsSchema } from './multiple-importance-sampling.js'
import { constantOf } from '@ludic/tensors'
import {
  aggregationOptionFields,
  applyImportanceWeights,
  checkPolicyInputs,
  clipOptionFields,
  runPolicyLoss,
  type PolicyLossInputs,
  type PolicyLossResult,
} from './policy-loss.js'
import { requireShape, requireTensor } from './tensor-checks.js'

export const rlPlusOptionsSchema = multipleImportanceSamplingOptionsSchema.extend({
  /**
   * γ of the exploration weight C_t = (1 − sg(π_θ(e_t)))^γ that multiplies the advantage of external tokens
   * (Eq. 6); 0 turns it off (e.g. when `withExplorationAdvantage` of @ludic/advantages already applied it).
   * Default 0.5 (paper §3 and released code).
   */
  explorationGamma: z.number().nonnegative().default(0.5),
  /**
   * Clip the ratio of internal (on-policy) tokens as PPO does, max(−Aρ, −A·clip(ρ, 1 − ε_low, 1 + ε_high)).
   * Default false: RL-PLUS's objective (Eq. 7) has no clip, and the released script trains with
   * `loss_remove_clip=True`. External tokens are never clipped (§3.3).
   */
  clipInternal: z.boolean().default(false),
  ...clipOptionFields,
  ...aggregationOptionFields,
})
export type RlPlusOptions = z.input<typeof rlPlusOptionsSchema>

export interface RlPlusLossInputs extends PolicyLossInputs {
  /**
   * `[batch, tokens]` bool: true where the token is external (a demonstration e_i of D_e, not sampled from
   * π_θold). For those tokens `oldLogprobs` is still log π_θold(e_t): the policy before the update scoring the
   * external token. A row may mix both (an external prefix continued by the policy).
   */
  externalMask: tf.Tensor
}

export type RlPlusLoss = (inputs: RlPlusLossInputs) => PolicyLossResult

/**
 * RL-PLUS's policy loss (Dong et al. 2025, https://arxiv.org/abs/2508.00222, Eq. 7): inward exploitation on the
 * policy's own samples plus outward exploration on external data, per token
 *
 *   internal:  ℓ_t = −ρ_t·A_t,               ρ_t = exp(clamp(log π_θ − log π_θold, ±20))   (clipped as PPO if `clipInternal`)
 *   external:  ℓ_t = −r^m_t·A_t·C_t,         r^m_t = π_θ / (¾π_θold + ¼u)   (Eq. 4, `multipleImportanceSamplingRatio`)
 *                                            C_t = (1 − sg(π_θ(e_t)))^γ     (Eq. 5–6, the exploration-based advantage A^c = A·C)
 *
 * aggregated over the mask. `advantages` are any estimator's (the paper: GRPO's (R − mean)/std over the group,
 * Eq. 5). Metrics as the other policy losses: the ratio metrics are over ρ on internal tokens and r^m on
 * external ones; the clip metrics count clipped internal tokens. A call reads nothing from the device.
 */
export function createRlPlusLoss(options: RlPlusOptions = {}): RlPlusLoss {
  const parsed = parseArgument(rlPlusOptionsSchema, options, 'options')
  const { clipLow, clipHigh, explorationGamma, uniformProbability } = parsed
  const caller = 'rl-plus'
  return (inputs) => {
    const batch = checkPolicyInputs(inputs, caller)
    const externalMask = requireTensor(inputs.externalMask, 'inputs.externalMask', caller)
    if (externalMask.dtype !== 'bool') {
      throw new InvalidArgumentError({ argument: 'inputs.externalMask', value: externalMask.dtype, message: `passed to '${caller}' must have dtype bool` })
    }
    requireShape(externalMask, batch.logprobs.shape, 'inputs.externalMask', caller)
    return runPolicyLoss(batch, ({ logprobs, oldLogprobs, advantages, mask, aggregate }) => {
      const external = tf.logicalAnd(externalMask, tf.notEqual(mask, 0))
      const logRatio = tf.clipByValue(tf.sub(logprobs, oldLogprobs), -20, 20)
      const ratio = tf.exp(logRatio)
      const unclipped = tf.neg(tf.mul(advantages, ratio))
      const clippedLosses = parsed.clipInternal ? tf.neg(tf.mul(advantages, tf.clipByValue(ratio, 1 - clipLow, 1 + clipHigh))) : undefined
      const internalLosses = clippedLosses === undefined ? unclipped : tf.maximum(unclipped, clippedLosses)
      const externalRatio = misRatio(logprobs, oldLogprobs, uniformProbability)
      // C_t from the current policy as a constant (detach in Eq. 6).
      const exploration =
        explorationGamma === 0 ? undefined : constantOf(() => tf.pow(tf.relu(tf.sub(1, tf.exp(tf.minimum(logprobs, 0)))), explorationGamma), mask)
      const externalAdvantages = exploration === undefined ? advantages : tf.mul(advantages, exploration)
      const externalLosses = tf.neg(tf.mul(externalAdvantages, externalRatio))
      const pgLosses = tf.where(external, externalLosses, internalLosses) // [batch, tokens]
      const loss = aggregate(applyImportanceWeights(pgLosses, batch, mask), parsed.aggregation, parsed)
      const clipped = clippedLosses === undefined ? undefined : tf.logicalAnd(tf.greater(clippedLosses, unclipped), tf.logicalNot(external))
      return {
        loss,
        logRatio,
        ratio: tf.where(external, externalRatio, ratio),
        ...(clipped === undefined
          ? {}
          : { clipped, high: tf.logicalAnd(clipped, tf.greater(advantages, 0)), low: tf.logicalAnd(clipped, tf.less(advantages, 0)) }),
      }
    })
  }
}
