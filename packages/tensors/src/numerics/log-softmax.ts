import * as tf from '@tensorflow/tfjs-core'
import { assertFloat, assertTensor, resolveAxis } from './checks.js'
import { stopGradient } from './stop-gradient.js'

/**
 * `log(sum(exp(x)))` along `axis`, computed as `m + log(sum(exp(x - m)))` with `m = max(x)` so it never
 * overflows. A slice that is all `-Infinity` gives `-Infinity` (not NaN); its gradient is the softmax.
 */
export function logsumexp(x: tf.Tensor, axis = -1, keepDims = false): tf.Tensor {
  assertTensor(x, 'x', 'logsumexp')
  assertFloat(x, 'x', 'logsumexp')
  const resolved = resolveAxis(axis, x.rank, 'logsumexp')
  return tf.tidy(() => {
    const { shift, total } = shiftedExponentials(x, resolved)
    const result = tf.add(tf.log(total), shift)
    return keepDims ? result : tf.squeeze(result, [resolved])
  })
}

/**
 * logsumexp's terms along `axis` (a resolved axis; dimensions kept): the shift `m = max(x)` (0 where a slice's
 * maximum is not finite), `exp(x − m)` and its sum — the softmax's numerator and denominator, for callers that
 * keep them (`tokenLogprobs`). `logsumexp = log(total) + shift`.
 */
export function shiftedExponentials(x: tf.Tensor, axis: number): { shift: tf.Tensor; exponentials: tf.Tensor; total: tf.Tensor } {
  const maximum = tf.max(x, axis, true)
  // All -Infinity (or +Infinity) slices would give NaN from x - max: shift by 0 there instead.
  const shift = stopGradient(tf.where(tf.isFinite(maximum), maximum, tf.zerosLike(maximum)))
  const exponentials = tf.exp(tf.sub(x, shift))
  return { shift, exponentials, total: tf.sum(exponentials, axis, true) }
}

/** `x - logsumexp(x)` along `axis`: log-probabilities from logits, stable for any magnitude. */
export function logSoftmax(x: tf.Tensor, axis = -1): tf.Tensor {
  assertTensor(x, 'logits', 'logSoftmax')
  assertFloat(x, 'logits', 'logSoftmax')
  const resolved = resolveAxis(axis, x.rank, 'logSoftmax')
  return tf.tidy(() => tf.sub(x, logsumexp(x, resolved, true)))
}
