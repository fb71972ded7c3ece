import * as tf from '@tensorflow/tfjs-core'

/**
 * log σ(x) = −softplus(−x), stable for any x (internal).
 *
 * Not `tf.logSigmoid`: its custom gradient closes over its input instead of saving it, so inside a
 * `tf.tidy` that runs under `tf.grad` (as every loss here does) the input is disposed before the backward
 * pass reads it. Softplus's registered gradient saves what it needs.
 */
export function logSigmoid(x: tf.Tensor): tf.Tensor {
  return tf.neg(tf.softplus(tf.neg(x)))
}
