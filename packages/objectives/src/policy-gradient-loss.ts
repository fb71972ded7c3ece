import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { aggregatePolicyLoss, aggregationOptionFields, applyImportanceWeights, collectPolicyMetrics, maskedInputs, readPolicyBatch, type PolicyLoss } from './policy-loss.js'

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
    const batch = readPolicyBatch(inputs, caller)
    const loss = tf.tidy(() => {
      const { logprobs, advantages, mask } = maskedInputs(batch)
      const pgLosses = tf.neg(tf.mul(logprobs, advantages)) // [batch, tokens]
      return aggregatePolicyLoss(applyImportanceWeights(pgLosses, batch, mask), batch, parsed.aggregation, parsed)
    })
    return { loss, ...collectPolicyMetrics(batch, loss, true) }
  }
}
