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

/** cos and sin of `positions · inverseFrequency`: each `[batch, 1, time, headDim / 2]`, broadcast over heads. */
export function rotaryTables(inverse: Float32Array, positions: Int32Array, batch: number, time: number): { cos: tf.Tensor4D; sin: tf.Tensor4D } {
  const half = inverse.length
  const cos = new Float32Array(batch * time * half)
  const sin = new Float32Array(batch * time * half)
  for (let row = 0; row < batch * time; row++) {
    const position = positions[row]!
    for (let index = 0; index < half; index++) {
      const angle = Math.fround(position * inverse[index]!)
      cos[row * half + index] = Math.cos(angle)
      sin[row * half + index] = Math.sin(angle)
    }
  }
  return { cos: tf.tensor4d(cos, [batch, 1, time, half]), sin: tf.tensor4d(sin, [batch, 1, time, half]) }
}

/** Rotates each head's pairs `(x[i], x[i + headDim/2])` by the position's angles. `x`: `[batch, heads, time, headDim]`. */
export function applyRotary(x: tf.Tensor, cos: tf.Tensor, sin: tf.Tensor): tf.Tensor {
  return tf.tidy(() => {
    const [first, second] = tf.split(x, 2, -1) as [tf.Tensor, tf.Tensor] // each [batch, heads, time, headDim / 2]
    const rotatedFirst = tf.sub(tf.mul(first, cos), tf.mul(second, sin))
    const rotatedSecond = tf.add(tf.mul(second, cos), tf.mul(first, sin))
    return tf.concat([rotatedFirst, rotatedSecond], -1) // [batch, heads, time, headDim]
  })
}
