import * as tf from '@tensorflow/tfjs-core'
import type { RopeScaling } from '../config/model-config.js'

/**
 * Rotary position embedding (Su et al., 2021, "RoFormer") in Hugging Face's "rotate half" layout: the
 * first and second halves of each head are the two coordinates of each rotated pair.
 *
 * The inverse frequencies and the cos/sin tables are computed on the host in float32 steps, as
 * transformers does (`base ** (arange(0, dim, 2) / dim)` in float32, `positions · inverseFrequency` in
 * float32), so the tables match PyTorch's to the last bit or so.
 */
export function inverseFrequencies(headDim: number, theta: number, scaling: RopeScaling | null): Float32Array {
  const half = headDim / 2
  const inverse = new Float32Array(half)
  for (let index = 0; index < half; index++) {
    const exponent = Math.fround((2 * index) / headDim)
    inverse[index] = Math.fround(1 / Math.fround(theta ** exponent))
  }
  if (scaling === null) return inverse
  if (scaling.type === 'linear') return inverse.map((value) => value / scaling.factor)
  return llama3InverseFrequencies(inverse, scaling)
}

/**
 * Llama 3.1's frequency-dependent scaling (transformers' `_compute_llama3_parameters`): long wavelengths
 * are divided by `factor`, short ones kept, the band between interpolated smoothly.
 */
function llama3InverseFrequencies(inverse: Float32Array, scaling: Extract<RopeScaling, { type: 'llama3' }>): Float32Array {
  const { factor, lowFrequencyFactor, highFrequencyFactor, originalMaxPositionEmbeddings } = scaling
  const lowFrequencyWavelength = originalMaxPositionEmbeddings / lowFrequencyFactor
  const highFrequencyWavelength = originalMaxPositionEmbeddings / highFrequencyFactor
  return inverse.map((frequency) => {
    const wavelength = Math.fround((2 * Math.PI) / frequency)
    const scaled = wavelength > lowFrequencyWavelength ? frequency / factor : frequency
    const isMedium = !(wavelength < highFrequencyWavelength) && !(wavelength > lowFrequencyWavelength)
    if (!isMedium) return scaled
    const smooth = (originalMaxPositionEmbeddings / wavelength - lowFrequencyFactor) / (highFrequencyFactor - lowFrequencyFactor)
    return (1 - smooth) * (scaled / factor) + smooth * scaled
  })
}

/**
 * cos and sin of `positions · inverseFrequency`, full width for `applyRotary`: each `[batch, 1, time, headDim]`
 * (broadcast over heads), `cos` repeated over the two halves and `sin` negated in the first half.
 */
export function rotaryTables(inverse: Float32Array, positions: Int32Array, batch: number, time: number): { cos: tf.Tensor4D; sin: tf.Tensor4D } {
  const half = inverse.length
  const width = 2 * half
  const cos = new Float32Array(batch * time * width)
  const sin = new Float32Array(batch * time * width)
  for (let row = 0; row < batch * time; row++) {
    const position = positions[row]!
    for (let index = 0; index < half; index++) {
      const angle = Math.fround(position * inverse[index]!)
      const c = Math.cos(angle)
      const s = Math.sin(angle)
      cos[row * width + index] = c
      cos[row * width + half + index] = c
      sin[row * width + index] = -s
      sin[row * width + half + index] = s
    }
  }
  return { cos: tf.tensor4d(cos, [batch, 1, time, width]), sin: tf.tensor4d(sin, [batch, 1, time, width]) }
}

/**
 * Rotates each head's pairs `(x[i], x[i + headDim/2])` by the position's angles: with the tables of
 * `rotaryTables`, `x · cos + swap(x) · sin`, where `swap` exchanges the two halves of each head — one matmul
 * by a permutation matrix (exact: one nonzero term per output), so four kernels forward and four backward
 * instead of a split, six products and sums and a concatenation. The values are those of
 * `(x₁ cos − x₂ sin, x₂ cos + x₁ sin)` to the bit. `x`: `[batch, heads, time, headDim]`; `cos`, `sin`:
 * `[batch, 1, time, headDim]`.
 */
export function applyRotary(x: tf.Tensor, cos: tf.Tensor, sin: tf.Tensor): tf.Tensor {
  return tf.tidy(() => {
    const width = x.shape[x.rank - 1]!
    const swapped = tf.reshape(tf.matMul(tf.reshape(x, [-1, width]) as tf.Tensor2D, halfSwap(width)), x.shape) // [batch, heads, time, headDim]
    return tf.add(tf.mul(x, cos), tf.mul(swapped, sin))
  })
}

/** The `[width, width]` permutation matrix that exchanges the two halves of a row: `x P = [x₂, x₁]`. */
function halfSwap(width: number): tf.Tensor2D {
  const half = width / 2
  const values = new Float32Array(width * width)
  for (let index = 0; index < half; index++) {
    values[index * width + half + index] = 1 // x[index] → column half + index
    values[(half + index) * width + index] = 1 // x[half + index] → column index
  }
  return tf.tensor2d(values, [width, width])
}
