import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'
import { checkGradientMap } from './gradient-map.js'
import { NonFiniteGradientError } from './non-finite-gradient-error.js'

export interface ClippedGradients {
  /** New tensors (the caller disposes them, and still owns the inputs), same names and order. */
  gradients: Map<string, tf.Tensor>
  /** The global L2 norm before clipping (a float32 value, as torch returns it). */
  norm: number
  /** The factor every gradient was multiplied by: min(1, maxNorm / (norm + 1e-6)). */
  coefficient: number
}

/**
 * Scales `gradients` so that their global L2 norm is at most `maxNorm`, exactly as
 * `torch.nn.utils.clip_grad_norm_(parameters, maxNorm, error_if_nonfinite=True)`: the norm is the L2
 * norm of the per-tensor L2 norms, the coefficient is `maxNorm / (norm + 1e-6)` clamped to 1 (torch
 * computes it as `(norm + 1e-6).reciprocal() * maxNorm` in float32; so does this), and every gradient is
 * multiplied by it.
 *
 * A NaN or infinite norm throws `NonFiniteGradientError` naming the parameters whose gradients hold NaN
 * or ±Infinity, instead of scaling by NaN. One host read per call (the per-tensor sums of squares).
 */
export function clipGradientsByGlobalNorm(gradients: ReadonlyMap<string, tf.Tensor>, maxNorm: number): ClippedGradients {
  const entries = checkGradientMap(gradients, 'gradients')
  if (typeof maxNorm !== 'number' || !(maxNorm > 0) || !Number.isFinite(maxNorm)) {
    throw new InvalidArgumentError({ argument: 'maxNorm', value: maxNorm, message: 'must be a positive finite number' })
  }
  if (entries.length === 0) return { gradients: new Map(), norm: 0, coefficient: 1 }
  const sumsOfSquares = tf.tidy(() => tf.stack(entries.map(([, gradient]) => tf.sum(tf.square(gradient)))).dataSync())
  const norms = entries.map(([, gradient], index) => {
    const sumOfSquares = sumsOfSquares[index]!
    return Number.isFinite(sumOfSquares) ? Math.fround(Math.sqrt(sumOfSquares)) : scaledNorm(gradient)
  })
  // torch: vector_norm(stack(per-tensor norms)), a float32 result.
  const norm = Math.fround(Math.sqrt(norms.reduce((total, value) => total + value * value, 0)))
  if (!Number.isFinite(norm)) {
    const nonFinite = entries.filter(([, gradient]) => hasNonFinite(gradient)).map(([name]) => name)
    throw new NonFiniteGradientError({ parameters: nonFinite, norm })
  }
  const reciprocal = Math.fround(1 / Math.fround(norm + Math.fround(1e-6)))
  const coefficient = Math.min(1, Math.fround(reciprocal * Math.fround(maxNorm)))
  const clipped = tf.tidy(() => {
    const factor = tf.scalar(coefficient)
    // Multiplying by exactly 1 changes nothing (torch multiplies anyway): share the data instead.
    return entries.map(([name, gradient]): [string, tf.Tensor] => [name, coefficient === 1 ? tf.clone(gradient) : tf.mul(gradient, factor)])
  })
  return { gradients: new Map(clipped), norm, coefficient }
}

/**
 * The L2 norm of a gradient whose float32 sum of squares overflowed: NaN or ±Infinity if it holds any
 * (reported by the caller), else max|g| · ‖g / max|g|‖ (torch accumulates in double on the CPU, so it
 * gets a finite norm there too).
 */
function scaledNorm(gradient: tf.Tensor): number {
  return tf.tidy(() => {
    const largest = tf.max(tf.abs(gradient)).dataSync()[0]!
    if (!Number.isFinite(largest)) return Number.NaN
    const scaled = tf.sum(tf.square(tf.div(gradient, tf.scalar(largest)))).dataSync()[0]!
    return Math.fround(largest * Math.sqrt(scaled))
  })
}

function hasNonFinite(gradient: tf.Tensor): boolean {
  return tf.tidy(() => tf.any(tf.logicalNot(tf.isFinite(gradient))).dataSync()[0] === 1)
}
