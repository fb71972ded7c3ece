import * as tf from '@tensorflow/tfjs-core'

/**
 * Root-mean-square layer normalisation (Zhang & Sennrich, 2019), as Llama's `LlamaRMSNorm`:
 * `weight · x / sqrt(mean(x²) + epsilon)` over the last axis.
 */
export function rmsNorm(x: tf.Tensor, weight: tf.Tensor, epsilon: number): tf.Tensor {
  return tf.tidy(() => {
    const meanSquare = tf.mean(tf.square(x), -1, true) // [..., 1]
    return tf.mul(tf.mul(x, tf.rsqrt(tf.add(meanSquare, epsilon))), weight)
  })
}
