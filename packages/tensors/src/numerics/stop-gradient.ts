import * as tf from '@tensorflow/tfjs-core'
import { assertTensor } from './checks.js'

const stop = tf.customGrad((x, save) => {
  void save
  return { value: tf.clone(x as tf.Tensor), gradFunc: (dy: tf.Tensor) => [tf.zerosLike(dy)] }
})

/**
 * The value of `x`, with no gradient flowing back through it (PyTorch's `detach()`): for importance
 * ratios and straight-through estimators in the losses.
 */
export function stopGradient<T extends tf.Tensor>(x: T): T {
  assertTensor(x, 'x', 'stopGradient')
  return stop(x) as T
}
