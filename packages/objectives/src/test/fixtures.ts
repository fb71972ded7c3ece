import * as tf from '@tensorflow/tfjs-core'
import { expect } from 'vitest'
import { createRandom } from '@ludic/core'
import { initTensors } from '@ludic/tensors'

/**
 * Test support (not exported by the package): tolerant comparison with error tracking, finite differences,
 * and random inputs. The reference fixtures come from @ludic/conformance-fixtures (loadConformanceFixture).
 */

/** Starts the backend under test: LUDIC_BACKEND, else wasm. */
export async function initBackendUnderTest(): Promise<void> {
  await initTensors({ backend: 'wasm', verbose: false })
}

/** Largest errors seen by `expectClose` calls that share it (for the report). */
export class ErrorTracker {
  maxRelative = 0
  maxAbsolute = 0
  compared = 0
  worst = ''
  /** Largest |actual − expected| / (absoluteTolerance + relativeTolerance·|expected|): 1 is the limit. */
  maxToleranceUse = 0

  record(actual: number, expected: number, label = ''): void {
    const absolute = Math.abs(actual - expected)
    this.maxToleranceUse = Math.max(this.maxToleranceUse, absolute / (absoluteTolerance + relativeTolerance * Math.abs(expected)))
    this.maxAbsolute = Math.max(this.maxAbsolute, absolute)
    if (Math.abs(expected) > 1e-3 && absolute / Math.abs(expected) > this.maxRelative) {
      this.maxRelative = absolute / Math.abs(expected)
      this.worst = `${label}: ${actual} vs ${expected}`
    }
    this.compared++
  }

  summary(label: string): string {
    return (
      `${label}: ${this.compared} values, max relative error ${this.maxRelative.toExponential(2)} (|expected| > 1e-3; at ${this.worst}), ` +
      `max absolute ${this.maxAbsolute.toExponential(2)}, tolerance used ${(100 * this.maxToleranceUse).toFixed(1)}%`
    )
  }
}

export const relativeTolerance = 1e-4
export const absoluteTolerance = 1e-5

/** |actual − expected| ≤ absolute + relative·|expected| elementwise, with a message naming the place. */
export function expectClose(
  actual: ArrayLike<number> | number,
  expected: ArrayLike<number> | number,
  label: string,
  options: { relative?: number; absolute?: number; tracker?: ErrorTracker } = {},
): void {
  const actualValues = typeof actual === 'number' ? [actual] : Array.from(actual)
  const expectedValues = typeof expected === 'number' ? [expected] : Array.from(expected)
  expect(actualValues.length, `${label}: length`).toBe(expectedValues.length)
  const relative = options.relative ?? relativeTolerance
  const absolute = options.absolute ?? absoluteTolerance
  for (let index = 0; index < expectedValues.length; index++) {
    const value = actualValues[index]!
    const reference = expectedValues[index]!
    options.tracker?.record(value, reference, `${label}[${index}]`)
    if (!(Math.abs(value - reference) <= absolute + relative * Math.abs(reference))) {
      throw new Error(`${label}[${index}]: ${value} vs expected ${reference} (difference ${Math.abs(value - reference)})`)
    }
  }
}

/** Flattens nested number arrays (fixtures are row-major nested lists). */
export function flat(values: unknown): number[] {
  return (values as unknown[]).flat(3) as number[]
}

export function tensor2d(values: number[][]): tf.Tensor2D {
  return tf.tensor2d(values, [values.length, values[0]?.length ?? 0], 'float32')
}

/** A float32 tensor of normal values (times `scale`, plus `shift`). */
export function randomTensor(shape: number[], seed: number, scale = 1, shift = 0): tf.Tensor {
  const random = createRandom(seed)
  const size = shape.reduce((a, b) => a * b, 1)
  return tf.tensor(
    Float32Array.from({ length: size }, () => random.nextNormal() * scale + shift),
    shape,
  )
}

/** A [batch, tokens] prefix mask with the given valid lengths. */
export function prefixMask(lengths: number[], tokens: number): tf.Tensor2D {
  return tf.tensor2d(
    lengths.map((length) => Array.from({ length: tokens }, (_, column) => (column < length ? 1 : 0))),
    [lengths.length, tokens],
  )
}

/**
 * Checks the gradient of `f` at `x` against central finite differences along random directions:
 * (f(x + h·v) − f(x − h·v)) / 2h ≈ ∇f(x)·v. `f` must return a scalar; float32 needs a moderate `step`.
 */
export function expectGradientMatchesFiniteDifferences(
  f: (x: tf.Tensor) => tf.Scalar,
  x: tf.Tensor,
  options: { step?: number; directions?: number; seed?: number; tolerance?: number; label: string },
): void {
  const step = options.step ?? 1e-2
  const gradient = tf.grad(f)(x)
  const gradientValues = gradient.dataSync()
  gradient.dispose()
  for (let index = 0; index < (options.directions ?? 3); index++) {
    const direction = randomTensor(x.shape, (options.seed ?? 7) * 100 + index)
    const directionValues = direction.dataSync()
    let analytic = 0
    for (let position = 0; position < directionValues.length; position++) analytic += gradientValues[position]! * directionValues[position]!
    const numeric = tf.tidy(() => {
      const plus = f(tf.add(x, tf.mul(direction, step))).dataSync()[0]!
      const minus = f(tf.sub(x, tf.mul(direction, step))).dataSync()[0]!
      return (plus - minus) / (2 * step)
    })
    direction.dispose()
    const tolerance = options.tolerance ?? 2e-3
    if (!(Math.abs(numeric - analytic) <= tolerance * (1 + Math.abs(analytic)))) {
      throw new Error(`${options.label}: directional derivative ${analytic} vs finite differences ${numeric} (direction ${index})`)
    }
  }
}
