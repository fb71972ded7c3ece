import * as tf from '@tensorflow/tfjs-core'
import type { z } from 'zod'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { tokenLogprobs } from '@ludic/tensors'
import { aggregateLossOptionsSchema, aggregateMasked, aggregationModeSchema, countMask, requireNonEmptyMask } from './aggregate-loss.js'
import { describeIndex, readFinite, readMask, requireFloatTensor, requireShape, requireTensor } from './tensor-checks.js'

export const sftLossOptionsSchema = aggregateLossOptionsSchema.extend({
  /** How token losses become a scalar. Default `token-mean` (the usual cross-entropy over all target tokens). */
  aggregation: aggregationModeSchema.default('token-mean'),
})
export type SftLossOptions = z.input<typeof sftLossOptionsSchema>

/**
 * Supervised fine-tuning loss: masked negative log-likelihood of the target tokens,
 * L = agg(−log softmax(logits)[target]) over the valid tokens.
 *
 * `logits` `[batch, tokens, vocab]` float32, `targetIds` `[batch, tokens]` int32 (the token each position
 * predicts; anything, e.g. −100, at masked positions), `mask` `[batch, tokens]` 0/1. metrics: `nll` (the
 * value), `perplexity` = exp(token-mean NLL), `tokens` (Σ mask).
 */
export function sftLoss(
  logits: tf.Tensor,
  targetIds: tf.Tensor,
  mask: tf.Tensor,
  options: SftLossOptions = {},
): { loss: tf.Scalar; metrics: { nll: number; perplexity: number; tokens: number } } {
  const caller = 'sftLoss'
  const parsed = parseArgument(sftLossOptionsSchema, options, 'options')
  const logitsTensor = requireFloatTensor(logits, 'logits', caller, [-1, -1, -1])
  const ids = requireTensor(targetIds, 'targetIds', caller)
  if (ids.dtype !== 'int32') throw new InvalidArgumentError({ argument: 'targetIds', value: ids.dtype, message: `passed to '${caller}' must have dtype int32` })
  const tokenShape = logitsTensor.shape.slice(0, 2)
  requireShape(ids, tokenShape, 'targetIds', caller)
  const maskRead = readMask(mask, 'mask', caller, tokenShape)
  const vocabulary = logitsTensor.shape[2]!
  const idValues = ids.dataSync()
  for (let index = 0; index < idValues.length; index++) {
    const id = idValues[index]!
    if (maskRead.data[index] !== 0 && !(id >= 0 && id < vocabulary)) {
      const message = `passed to '${caller}' must be a token id in [0, ${vocabulary}) at ${describeIndex(index, ids.shape)}`
      throw new InvalidArgumentError({ argument: 'targetIds', value: id, message })
    }
  }
  let tokenMeanNll = 0
  const loss = tf.tidy(() => {
    // Ids at masked positions (padding, −100) are replaced by 0; the mask drops their loss.
    const safeIds = tf.where(tf.greater(maskRead.tensor, 0), ids, tf.zerosLike(ids)) // [batch, tokens]
    const nll = tf.neg(tokenLogprobs(logitsTensor, safeIds)) // [batch, tokens]
    const nllData = readFinite(nll, 'logits', caller, maskRead.data)
    let total = 0
    let count = 0
    for (let index = 0; index < nllData.length; index++) {
      if (maskRead.data[index] === 0) continue
      total += nllData[index]!
      count++
    }
    tokenMeanNll = count === 0 ? 0 : total / count
    requireNonEmptyMask(countMask(maskRead.data, tokenShape[0]!, tokenShape[1]!), parsed.aggregation, parsed, caller)
    return aggregateMasked(nll, maskRead.tensor, parsed.aggregation, parsed, caller).loss
  })
  const tokens = maskRead.data.reduce((total, weight) => total + weight, 0)
  return { loss, metrics: { nll: loss.dataSync()[0]!, perplexity: Math.exp(tokenMeanNll), tokens } }
}
