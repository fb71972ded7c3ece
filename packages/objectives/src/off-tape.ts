import * as tf from '@tensorflow/tfjs-core'

/**
 * Computations the gradient tape does not record. Inside `tf.grad` / `computeGradients` every op is taped
 * (and the tensors its gradient needs are cloned and kept), even ops the loss does not depend on; and an op
 * without a gradient (a comparison) on the way to the loss makes the backward pass throw. A `customGrad`'s
 * forward function runs untaped: both helpers run their computation there, with a tensor the differentiated
 * input does not reach (the mask) as the custom op's only input, so the op is not on the path to the loss.
 */

/** `compute()` as a constant for the gradient, like a tensor made from values read off the device, without the read. */
export function constantOf(compute: () => tf.Tensor, anchor: tf.Tensor): tf.Tensor {
  return tf.customGrad((input) => ({ value: compute(), gradFunc: () => tf.zerosLike(input as tf.Tensor) }))(anchor)
}

/**
 * Runs `compute` untaped and returns what it returns. The tensors it creates are freed when it returns,
 * except those it keeps (`tf.keep`): it must keep every tensor it returns (the metrics do; they outlive the
 * caller's tidy anyway).
 */
export function offTape<T>(compute: () => T, anchor: tf.Tensor): T {
  let result: T | undefined
  const done = tf.customGrad((input) => {
    result = compute()
    return { value: tf.scalar(0), gradFunc: () => tf.zerosLike(input as tf.Tensor) }
  })(anchor)
  done.dispose()
  return result as T
}
