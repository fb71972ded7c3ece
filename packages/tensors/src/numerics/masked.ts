import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'
import { assertFloat, assertSameShape, assertTensor, resolveAxis } from './checks.js'

/**
 * Masked reductions as verl defines them (`verl/utils/torch_functional.py`). The mask is float 0/1 with
 * the values' shape. Values at masked positions never reach the result, even NaN or Infinity ones.
 */

function maskedValues(values: tf.Tensor, mask: tf.Tensor, caller: string): tf.Tensor {
  assertTensor(values, 'values', caller)
  assertTensor(mask, 'mask', caller)
  assertFloat(values, 'values', caller)
  assertSameShape(values, mask, 'mask', caller)
  const floatMask = mask.dtype === 'float32' ? mask : tf.cast(mask, 'float32')
  return tf.mul(tf.where(tf.greater(floatMask, 0), values, tf.zerosLike(values)), floatMask)
}

/** `sum(values * mask)` over `axis` (all axes when omitted). */
export function maskedSum(values: tf.Tensor, mask: tf.Tensor, axis?: number): tf.Tensor {
  return tf.tidy(() => {
    const product = maskedValues(values, mask, 'maskedSum')
    return axis === undefined ? tf.sum(product) : tf.sum(product, resolveAxis(axis, values.rank, 'maskedSum'))
  })
}

/** `sum(values * mask) / (sum(mask) + 1e-8)` over `axis` (all axes when omitted), as verl. */
export function maskedMean(values: tf.Tensor, mask: tf.Tensor, axis?: number): tf.Tensor {
  return tf.tidy(() => {
    const product = maskedValues(values, mask, 'maskedMean')
    const floatMask = tf.cast(mask, 'float32')
    if (axis === undefined) return tf.div(tf.sum(product), tf.add(tf.sum(floatMask), 1e-8))
    const resolved = resolveAxis(axis, values.rank, 'maskedMean')
    return tf.div(tf.sum(product, resolved), tf.add(tf.sum(floatMask, resolved), 1e-8))
  })
}

/**
 * Masked variance over all elements; unbiased (Bessel's `n / (n - 1)`, `n = sum(mask)`) by default.
 * Fewer than two valid elements is an `InvalidArgumentError`, as verl raises.
 */
export function maskedVariance(values: tf.Tensor, mask: tf.Tensor, unbiased = true): tf.Tensor {
  const count = validCount(mask, 'maskedVariance')
  if (unbiased && count < 2) {
    throw new InvalidArgumentError({
      argument: 'mask',
      value: count,
      message: "passed to 'maskedVariance' must select at least 2 elements for the unbiased variance",
    })
  }
  return tf.tidy(() => varianceOfValid(values, mask, count, unbiased))
}

/** The masked variance once `count` (the number of valid elements) is known and checked. */
function varianceOfValid(values: tf.Tensor, mask: tf.Tensor, count: number, unbiased: boolean): tf.Tensor {
  const mean = maskedMean(values, mask)
  const variance = maskedMean(tf.square(tf.sub(values, mean)), mask)
  return unbiased ? tf.mul(variance, count / (count - 1)) : variance
}

/**
 * Whitening over the valid elements: `(values - mean) * rsqrt(variance + 1e-8)` with the masked mean
 * and the unbiased masked variance; `shiftMean: false` adds the mean back. Masked positions are not
 * re-masked (as verl): multiply by the mask where that matters.
 */
export function maskedWhiten(values: tf.Tensor, mask: tf.Tensor, options: { shiftMean?: boolean } = {}): tf.Tensor {
  const count = validCount(mask, 'maskedWhiten')
  if (count < 2) {
    throw new InvalidArgumentError({
      argument: 'mask',
      value: count,
      message: "passed to 'maskedWhiten' must select at least 2 elements (the variance is unbiased)",
    })
  }
  return tf.tidy(() => {
    const mean = maskedMean(values, mask)
    const variance = varianceOfValid(values, mask, count, true) // the mask was read once, above
    const whitened = tf.mul(tf.sub(values, mean), tf.rsqrt(tf.add(variance, 1e-8)))
    return options.shiftMean === false ? tf.add(whitened, mean) : whitened
  })
}

function validCount(mask: tf.Tensor, caller: string): number {
  assertTensor(mask, 'mask', caller)
  const data = mask.dataSync()
  let count = 0
  for (let index = 0; index < data.length; index++) {
    const weight = data[index]!
    if (weight !== 0 && weight !== 1) {
      throw new InvalidArgumentError({ argument: `mask (flat index ${index})`, value: weight, message: `passed to '${caller}' must hold only 0 and 1` })
    }
    count += weight
  }
  return count
}
