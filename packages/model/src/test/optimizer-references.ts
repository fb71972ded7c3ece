import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import * as tf from '@tensorflow/tfjs-core'
import { expect } from 'vitest'

/**
 * Test support (not exported): the torch/transformers fixture written by
 * `scripts/make-optimizer-references.py`, and float32 comparison in units in the last place.
 */
export interface OptimizerReferenceStep {
  gradients: Record<string, number[]>
  clip?: { maxNorm: number; norm: number; clipped: Record<string, number[]> }
  learningRate: number
  expected: Record<string, number[]>
}

export interface OptimizerReferenceCase {
  id: string
  description: string
  torchClass: 'AdamW' | 'Adam'
  options: {
    learningRate: number
    beta1: number
    beta2: number
    epsilon: number
    weightDecay: number
    decoupled: boolean
    excludeFromWeightDecay: string[]
  }
  clipMaxNorm: number | null
  schedule: { warmupSteps: number; totalSteps: number; minRatio: number } | null
  shapes: Record<string, number[]>
  initial: Record<string, number[]>
  steps: OptimizerReferenceStep[]
  finalState: { step: number; 'lm_head.weight.exp_avg': number[]; 'lm_head.weight.exp_avg_sq': number[] }
}

export interface ClippingReferenceCase {
  id: string
  maxNorm: number
  shapes: Record<string, number[]>
  gradients: Record<string, number[]>
  norm: number
  clipped: Record<string, number[]>
}

export interface ScheduleReferenceCase {
  id: string
  function: string
  options: { warmupSteps?: number; totalSteps?: number; minRatio?: number; cycles?: number }
  values: number[]
}

export interface OptimizerReferences {
  torch: string
  transformers: string
  optimizer: OptimizerReferenceCase[]
  clipping: ClippingReferenceCase[]
  schedules: ScheduleReferenceCase[]
}

export function loadOptimizerReferences(): OptimizerReferences {
  const path = fileURLToPath(new URL('../../test/fixtures/optimizer-references.json', import.meta.url))
  return JSON.parse(readFileSync(path, 'utf8')) as OptimizerReferences
}

/** Tensors from a fixture's named flat values and shapes (the caller disposes them). */
export function tensorsOf(values: Record<string, number[]>, shapes: Record<string, number[]>): Map<string, tf.Tensor> {
  return new Map(Object.entries(values).map(([name, data]) => [name, tf.tensor(data, shapes[name]!, 'float32')]))
}

const scratch = new DataView(new ArrayBuffer(8))

/** Distance between two float32 values in units in the last place (0 when identical; NaN or infinities: Infinity unless equal). */
export function float32UlpDistance(a: number, b: number): number {
  if (Object.is(a, b) || a === b) return 0
  if (!Number.isFinite(a) || !Number.isFinite(b)) return Number.POSITIVE_INFINITY
  const ordered = (value: number): number => {
    scratch.setFloat32(0, value)
    const bits = scratch.getInt32(0)
    return bits < 0 ? -2147483648 - bits : bits // monotonic integer order across the sign
  }
  return Math.abs(ordered(a) - ordered(b))
}

/** The spacing of float32 values at `value` (one unit in the last place). */
export function float32Ulp(value: number): number {
  const magnitude = Math.abs(Math.fround(value))
  if (magnitude < 2 ** -126) return 2 ** -149
  return 2 ** (Math.floor(Math.log2(magnitude)) - 23)
}

/**
 * Largest differences seen across comparisons, for the report. An element agrees when it is within
 * `maxUlp` units in the last place of the reference element, or within `maxUlp` units in the last place
 * of the tensor's largest reference magnitude (a result near zero from cancelling operands, e.g.
 * θ − update, inherits the operands' absolute rounding error, not its own).
 */
export class AgreementTracker {
  maxUlp = 0
  /** Largest |Δ| in units in the last place of the tensor's largest element. */
  maxScaledUlp = 0
  maxRelative = 0
  identical = 0
  compared = 0
  worst = ''

  compare(actual: ArrayLike<number>, expected: ArrayLike<number>, label: string, maxUlp: number): void {
    expect(actual.length, `${label}: length`).toBe(expected.length)
    let scale = 0
    for (let index = 0; index < expected.length; index++) scale = Math.max(scale, Math.abs(expected[index]!))
    const scaleUlp = float32Ulp(scale)
    for (let index = 0; index < expected.length; index++) {
      const a = actual[index]!
      const e = Math.fround(expected[index]!)
      const ulp = float32UlpDistance(a, e)
      const scaled = Math.abs(a - e) / scaleUlp
      this.compared++
      if (ulp === 0) this.identical++
      if (ulp > this.maxUlp) {
        this.maxUlp = ulp
        this.worst = `${label}[${index}]: ${a} vs ${e}`
      }
      this.maxScaledUlp = Math.max(this.maxScaledUlp, scaled)
      if (Math.abs(e) > 1e-3 * scale) this.maxRelative = Math.max(this.maxRelative, Math.abs(a - e) / Math.abs(e))
      if (!(ulp <= maxUlp || scaled <= maxUlp)) {
        expect.fail(
          `${label}[${index}]: ${a} differs from the reference ${e} by ${ulp} ulp (${scaled.toFixed(2)} ulp of the tensor's largest ${scale}; limit ${maxUlp})`,
        )
      }
    }
  }

  summary(): string {
    return (
      `${this.compared} values, ${this.identical} identical; max ${this.maxScaledUlp.toFixed(2)} ulp of the tensor's largest element, ` +
      `max ${this.maxUlp} ulp of the element itself, max relative ${this.maxRelative.toExponential(2)} (elements ≥ 1e-3 of their tensor's largest)` +
      (this.worst === '' ? '' : `; most ulp at ${this.worst}`)
    )
  }
}
