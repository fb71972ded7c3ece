import * as tf from '@tensorflow/tfjs-core'
import type { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { entropyFromLogits } from '@ludic/tensors'
import { aggregateLossOptionsSchema, aggregateMasked, aggregationModeSchema, countMask, requireNonEmptyMask } from './aggregate-loss.js'
import { readFinite, readMask, requireFloatTensor, requireValidLogits } from './tensor-checks.js'

export const entropyBonusOptionsSchema = aggregateLossOptionsSchema.extend({
  /** verl `loss_agg_mode`. Default `token-mean`. */
  aggregation: aggregationModeSchema.default('token-mean'),
})
export type EntropyBonusOptions = z.input<typeof entropyBonusOptionsSchema>

/**
 * Entropy of the policy, verl `compute_entropy_loss`: H_t = logsumexp(logits_t) − Σ softmax(logits_t)·logits_t
 * per token, aggregated over the mask with `aggregateLoss`. `loss` is that (positive) entropy, verl's
 * `entropy_loss`: the trainer *subtracts* `entropyCoefficient · loss` from the policy loss to reward
 * exploration (cleanrl: `loss = pgLoss − entCoef · entropyLoss + vfCoef · valueLoss`).
 *
 * `logits` is `[batch, tokens, vocab]` float32 (−Infinity allowed for masked vocabulary entries), `mask`
 * `[batch, tokens]` 0/1. A token whose entropy is not finite (NaN or +Infinity logits at a valid token) is an error.
 */
export function entropyBonus(logits: tf.Tensor, mask: tf.Tensor, options: EntropyBonusOptions = {}): { loss: tf.Scalar; metrics: { entropy: number } } {
  const caller = 'entropyBonus'
  const parsed = parseArgument(entropyBonusOptionsSchema, options, 'options')
  const logitsTensor = requireFloatTensor(logits, 'logits', caller, [-1, -1, -1])
  const maskRead = readMask(mask, 'mask', caller, logitsTensor.shape.slice(0, 2))
  // entropyFromLogits treats any non-finite logit as a masked vocabulary entry: refuse NaN and +Infinity here.
  requireValidLogits(logitsTensor, maskRead.data, 'logits', caller)
  const loss = tf.tidy(() => {
    const tokenEntropy = entropyFromLogits(logitsTensor) // [batch, tokens]
    readFinite(tokenEntropy, 'logits', caller, maskRead.data)
    requireNonEmptyMask(countMask(maskRead.data, logitsTensor.shape[0]!, logitsTensor.shape[1]!), parsed.aggregation, parsed, caller)
    return aggregateMasked(tokenEntropy, maskRead.tensor, parsed.aggregation, parsed, caller).loss
  })
  return { loss, metrics: { entropy: loss.dataSync()[0]! } }
}
