import * as tf from '@tensorflow/tfjs-core'

/**
 * Root-mean-square layer normalisation (Zhang & Sennrich, 2019), as Llama's `LlamaRMSNorm`:
 * `y = w · x · r` over the last axis, with `r = 1 / sqrt(mean(x²) + epsilon)`.
 *
 * The gradient is written out rather than left to autodiff (which builds about twice the kernels from the
 * six forward ones): with `n = x · r` and `g = dy · w`,
 * `dx = r · (g − n · mean(g · n))` and `dw = Σ dy · n` over every axis but the last.
 * The forward values are computed exactly as before (same kernels, same order).
 */
export function rmsNorm(x: tf.Tensor, weight: tf.Tensor, epsilon: number): tf.Tensor {
  const compute = tf.customGrad((input, scale, save) => {
    const xs = input as tf.Tensor
    const w = scale as tf.Tensor
    const inverseRoot = tf.rsqrt(tf.add(tf.mean(tf.square(xs), -1, true), epsilon)) // [..., 1]
    ;(save as tf.GradSaveFunc)([xs, w, inverseRoot])
    return {
      value: tf.mul(tf.mul(xs, inverseRoot), w),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [savedX, savedWeight, savedRoot] = saved as [tf.Tensor, tf.Tensor, tf.Tensor]
        const normed = tf.mul(savedX, savedRoot) // [..., width]
        const width = savedWeight.size
        const weightGradient = tf.sum(tf.reshape(tf.mul(dy, normed), [-1, width]), 0) // [width]
        const g = tf.mul(dy, savedWeight)
        const inputGradient = tf.mul(tf.sub(g, tf.mul(normed, tf.mean(tf.mul(g, normed), -1, true))), savedRoot)
        return [inputGradient, tf.reshape(weightGradient, savedWeight.shape)]
      },
    }
  })
  return compute(x, weight)
}
