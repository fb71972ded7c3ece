import * as tf from '@tensorflow/tfjs-core'

/**
 * SwiGLU (Shazeer, 2020) on the fused gate/up projection: `gateUp` is `[rows, 2 · intermediate]`, the gate's
 * outputs then the up projection's; returns `silu(gate) · up`, `[rows, intermediate]`, with
 * `silu(g) = g · σ(g)`.
 *
 * The gradient is written out and returned as one fused tensor, ready for the fused projection's matmul:
 * `d up = dy · silu(g)` and `d gate = dy · up · (σ(g) + silu(g) · (1 − σ(g)))`. Forward values are computed
 * with the kernels and order of the unfused `mul(mul(g, sigmoid(g)), up)`.
 */
export function swiGlu(gateUp: tf.Tensor2D): tf.Tensor2D {
  const compute = tf.customGrad((input, save) => {
    const [gate, up] = tf.split(input as tf.Tensor2D, 2, -1) as [tf.Tensor2D, tf.Tensor2D] // each [rows, intermediate]
    const sigmoid = tf.sigmoid(gate)
    const silu = tf.mul(gate, sigmoid)
    ;(save as tf.GradSaveFunc)([silu, sigmoid, up])
    return {
      value: tf.mul(silu, up),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [savedSilu, savedSigmoid, savedUp] = saved as [tf.Tensor, tf.Tensor, tf.Tensor]
        const siluDerivative = tf.add(savedSigmoid, tf.mul(savedSilu, tf.sub(1, savedSigmoid)))
        return tf.concat([tf.mul(tf.mul(dy, savedUp), siluDerivative), tf.mul(dy, savedSilu)], -1)
      },
    }
  })
  return compute(gateUp) as tf.Tensor2D
}
