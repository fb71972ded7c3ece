import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { aggregateLossOptionsSchema, aggregateMasked, aggregationModeSchema, countMask, requireNonEmptyMask } from './aggregate-loss.js'
import { readFinite, readMask, requireFloatTensor, zeroMasked } from './tensor-checks.js'

export const valueLossOptionsSchema = aggregateLossOptionsSchema.extend({
  /** verl `cliprange_value`: the new value may move at most this far from the old one before the loss stops pulling. Default 0.5 (verl). */
  clipRangeValue: z.number().nonnegative().default(0.5),
  /** verl `loss_agg_mode`. Default `token-mean`. */
  aggregation: aggregationModeSchema.default('token-mean'),
})
export type ValueLossOptions = z.input<typeof valueLossOptionsSchema>

export interface ValueLossInputs {
  /** `[batch, tokens]` float32: the critic's current predictions V_θ (the differentiated input; verl `vpreds`). */
  values: tf.Tensor
  /** `[batch, tokens]` float32: the predictions when the rollout was scored (verl `values`). */
  oldValues: tf.Tensor
  /** `[batch, tokens]` float32: the regression targets (GAE returns). */
  returns: tf.Tensor
  /** `[batch, tokens]` 0/1. */
  mask: tf.Tensor
}

/**
 * Clipped value loss, verl `compute_value_loss` (from TRL's PPO; Schulman et al. 2017):
 *
 *   V_clip = clamp(V, V_old − c, V_old + c);  L = ½·agg(max((V − R)², (V_clip − R)²))
 *
 * metrics: `valueLoss` (the value), `valueClipFraction` (verl `vf_clipfrac`: masked mean of
 * (V_clip − R)² > (V − R)², +1e-8 in the denominator), `valuePredictionMean` (verl `vpred_mean`).
 */
export function valueLoss(
  inputs: ValueLossInputs,
  options: ValueLossOptions = {},
): { loss: tf.Scalar; metrics: { valueLoss: number; valueClipFraction: number; valuePredictionMean: number } } {
  const caller = 'valueLoss'
  const parsed = parseArgument(valueLossOptionsSchema, options, 'options')
  const values = requireFloatTensor(inputs.values, 'inputs.values', caller, [-1, -1])
  const oldValues = requireFloatTensor(inputs.oldValues, 'inputs.oldValues', caller, values.shape)
  const returns = requireFloatTensor(inputs.returns, 'inputs.returns', caller, values.shape)
  const mask = readMask(inputs.mask, 'inputs.mask', caller, values.shape)
  const valueData = readFinite(values, 'inputs.values', caller, mask.data)
  const oldValueData = readFinite(oldValues, 'inputs.oldValues', caller, mask.data)
  const returnData = readFinite(returns, 'inputs.returns', caller, mask.data)
  const clipRange = parsed.clipRangeValue
  const loss = tf.tidy(() => {
    const floatMask = tf.cast(mask.tensor, 'float32')
    const [prediction, old, target] = [values, oldValues, returns].map((tensor) => zeroMasked(tensor, floatMask)) as [tf.Tensor, tf.Tensor, tf.Tensor]
    // verl clip_by_value: max(min(V, V_old + c), V_old − c).
    const predictionClipped = tf.maximum(tf.minimum(prediction, tf.add(old, clipRange)), tf.sub(old, clipRange))
    const valueLosses1 = tf.square(tf.sub(prediction, target))
    const valueLosses2 = tf.square(tf.sub(predictionClipped, target))
    const clippedValueLosses = tf.maximum(valueLosses1, valueLosses2) // [batch, tokens]
    const names = { mask: 'inputs.mask', counts: 'options' }
    requireNonEmptyMask(countMask(mask.data, values.shape[0]!, values.shape[1]!), parsed.aggregation, parsed, caller, names)
    return tf.mul(0.5, aggregateMasked(clippedValueLosses, mask.tensor, parsed.aggregation, parsed, caller, names).loss) as tf.Scalar
  })
  let clipped = 0
  let predictionSum = 0
  let validTokens = 0
  for (let index = 0; index < mask.data.length; index++) {
    if (mask.data[index] === 0) continue
    const value = valueData[index]!
    const old = oldValueData[index]!
    const clippedValue = Math.max(Math.min(value, old + clipRange), old - clipRange)
    if ((clippedValue - returnData[index]!) ** 2 > (value - returnData[index]!) ** 2) clipped++
    predictionSum += value
    validTokens++
  }
  return {
    loss,
    metrics: {
      valueLoss: loss.dataSync()[0]!,
      valueClipFraction: clipped / (validTokens + 1e-8),
      valuePredictionMean: predictionSum / (validTokens + 1e-8),
    },
  }
}
