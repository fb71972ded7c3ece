import * as tf from '@tensorflow/tfjs-core'
import { expect } from 'vitest'
import { activateBackend, type BackendName } from '../backend/init-tensors.js'
import { backendUnderTest } from './backend-under-test.js'

/** Test support: run the same computation on the backend under test and on the CPU reference. */

/** A deterministic float in [-1, 1) per index (no state shared between tests). */
export function sampleValues(size: number, seed: number): Float32Array {
  const values = new Float32Array(size)
  let state = (seed * 2654435761) >>> 0 || 1
  for (let index = 0; index < size; index++) {
    // xorshift32
    state ^= state << 13
    state >>>= 0
    state ^= state >>> 17
    state ^= state << 5
    state >>>= 0
    values[index] = state / 2 ** 31 - 1
  }
  return values
}

/**
 * Activates `backend`, runs `compute` inside `tf.tidy`, reads every returned tensor back as a plain
 * typed array and disposes it.
 */
export async function runOn<Names extends string>(
  backend: BackendName,
  compute: () => Record<Names, tf.Tensor>,
): Promise<Record<Names, Float32Array | Int32Array | Uint8Array>> {
  await activateBackend(backend)
  const tensors = tf.tidy(() => compute())
  const values = {} as Record<Names, Float32Array | Int32Array | Uint8Array>
  for (const name of Object.keys(tensors) as Names[]) {
    values[name] = (await tensors[name].data()) as Float32Array | Int32Array | Uint8Array
  }
  tf.dispose(Object.values(tensors) as tf.Tensor[])
  return values
}

/**
 * Runs `compute` on the backend under test and on the CPU reference (`reference` instead, when given:
 * an equivalent computation for cases the CPU backend gets wrong); returns both results.
 */
export async function compareWithCpu<Names extends string>(
  compute: () => Record<Names, tf.Tensor>,
  reference: () => Record<Names, tf.Tensor> = compute,
): Promise<{ actual: Record<Names, Float32Array | Int32Array | Uint8Array>; expected: Record<Names, Float32Array | Int32Array | Uint8Array> }> {
  const actual = await runOn(backendUnderTest(), compute)
  const expected = await runOn('cpu', reference)
  return { actual, expected }
}

/**
 * Expects `actual` ≈ `expected` elementwise: |actual − expected| ≤ relative · max(|expected|, 1)
 * (values of order one; float32 sums of a few hundred terms stay well inside 1e-4).
 */
export function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, label: string, relative = 1e-4): void {
  expect(actual.length, `${label}: length`).toBe(expected.length)
  let worst = 0
  let worstIndex = -1
  for (let index = 0; index < expected.length; index++) {
    const error = Math.abs(actual[index]! - expected[index]!) / Math.max(Math.abs(expected[index]!), 1)
    if (!(error <= worst)) {
      worst = error
      worstIndex = index
    }
  }
  expect(
    worst,
    `${label}: worst relative error ${worst} at ${worstIndex} (actual ${actual[worstIndex]}, expected ${expected[worstIndex]})`,
  ).toBeLessThanOrEqual(relative)
}

/** `expectClose` for every named result. */
export function expectAllClose<Names extends string>(
  results: { actual: Record<Names, ArrayLike<number>>; expected: Record<Names, ArrayLike<number>> },
  label: string,
  relative = 1e-4,
): void {
  for (const name of Object.keys(results.expected) as Names[]) {
    expectClose(results.actual[name], results.expected[name], `${label} ${name}`, relative)
  }
}
