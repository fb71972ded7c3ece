import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { aggregationOptionFields, applyImportanceWeights, checkPolicyInputs, runPolicyLoss, type PolicyLoss } from './policy-loss.js'

export const policyGradientOptionsSchema = z.strictObject({
  ...aggregationOptionFields,
})
export type PolicyGradientOptions = z.input<typeof policyGradientOptionsSchema>

/**
 * Plain policy gradient (REINFORCE, Williams 1992): L = −A·log π, no ratio and no clipping. This is verl
 * `compute_policy_loss_gpg` — GPG (Chu et al. 2025, https://arxiv.org/abs/2504.02546) is this loss with its
 * own advantage estimator — so `pg` and `gpg` name the same loss. `oldLogprobs` is only used for approxKl
 * and the ratio metrics; the clip metrics are 0.
 */
export function createPolicyGradientLoss(options: PolicyGradientOptions = {}, caller = 'pg'): PolicyLoss {
  const parsed = parseArgument(policyGradientOptionsSchema, options, 'options')
  return (inputs) => {
    const batch = checkPolicyInputs(inputs, caller)
    return runPolicyLoss(batch, ({ logprobs, advantages, mask, aggregate }) => {
      const pgLosses = tf.neg(tf.mul(logprobs, advantages)) // [batch, tokens]
      return { loss: aggregate(applyImportanceWeights(pgLosses, batch, mask), parsed.aggregation, parsed) }
    })
  }
}
