import * as tf from '@tensorflow/tfjs-core'

/** Layer normalisation (Ba et al., 2016) over the last axis, as `torch.nn.LayerNorm`: biased variance. */
export function layerNorm(x: tf.Tensor, weight: tf.Tensor, bias: tf.Tensor, epsilon: number): tf.Tensor {
  return tf.tidy(() => {
    const { mean, variance } = tf.moments(x, -1, true) // each [..., 1]
    return tf.add(tf.mul(tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, epsilon))), weight), bias)
  })
}

/** GPT-2's GELU, the tanh approximation (`gelu_new`): `x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))`. */
export function geluTanh(x: tf.Tensor): tf.Tensor {
  return tf.tidy(() => {
    const inner = tf.mul(tf.add(x, tf.mul(tf.mul(tf.mul(x, x), x), 0.044715)), Math.sqrt(2 / Math.PI))
    return tf.mul(tf.mul(x, 0.5), tf.add(tf.tanh(inner), 1))
  })
}
