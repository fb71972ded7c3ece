/**
 * Test support: runs an estimator on the verl reference fixtures (@ludic/conformance-fixtures, converted
 * from verl's outputs) and compares every case. A missing or incomplete fixture throws: it is never
 * skipped. Not part of the package's API.
 */
import { loadConformanceFixture, type ConformanceCase, type FixtureName } from '@ludic/conformance-fixtures'
import { InvalidArgumentError, type AdvantageBatch, type AdvantageEstimatorV1 } from '@ludic/core'
import { describe, expect, it } from 'vitest'

export interface VerlInputs {
  token_level_rewards: number[][]
  response_mask: number[][]
  values?: number[][]
  index?: string[]
  reward_baselines?: number[]
}

export type VerlCase = ConformanceCase<VerlInputs, Record<string, number | boolean>, { advantages: number[][]; returns: number[][] }>

/**
 * Two ways to turn verl's padded `[batch][token]` matrices into a ragged batch:
 * - `ragged`: a row whose mask is a prefix (and whose padding holds no reward) becomes a sample of its
 *   valid length with no mask; other rows (observation spans in the middle, rewards on padding) keep
 *   their full length and their mask.
 * - `masked`: every row keeps its full length and its mask.
 * A row with no valid token becomes an empty sample (a mask with no valid token is an error).
 */
export type Layout = 'ragged' | 'masked'

export function toAdvantageBatch(inputs: VerlInputs, layout: Layout, precision: Precision = 'float32'): AdvantageBatch {
  const rows = inputs.token_level_rewards.map((rewards, row) => {
    const mask = inputs.response_mask[row]!
    const valid = mask.reduce((sum, value) => sum + value, 0)
    const isPrefix = mask.every((value, token) => value === (token < valid ? 1 : 0))
    const paddingIsEmpty = rewards.every((reward, token) => token < valid || reward === 0)
    if (valid === 0) {
      if (!paddingIsEmpty) throw new Error(`row ${row} has rewards but no valid token: not representable`)
      return { length: 0, mask: undefined }
    }
    if (layout === 'ragged' && isPrefix && paddingIsEmpty) return { length: valid, mask: undefined }
    return { length: rewards.length, mask: Uint8Array.from(mask) }
  })
  const needsMasks = rows.some((row) => row.mask !== undefined)
  const slice = (matrix: number[][]) =>
    matrix.map((values, row) => {
      const kept = values.slice(0, rows[row]!.length)
      return precision === 'float32' ? Float32Array.from(kept) : float64Disguised(kept)
    })
  return {
    tokenRewards: slice(inputs.token_level_rewards),
    groupIds: inputs.index ?? inputs.token_level_rewards.map((_, row) => `row-${row}`),
    ...(inputs.values === undefined ? {} : { values: slice(inputs.values) }),
    ...(inputs.reward_baselines === undefined ? {} : { baselineRewards: inputs.reward_baselines }),
    ...(needsMasks ? { tokenMasks: rows.map((row) => row.mask ?? new Uint8Array(row.length).fill(1)) } : {}),
  }
}

/**
 * `float32`: inputs rounded to float32, as the API takes them. `float64`: the fixture's exact float64
 * inputs in a `Float64Array` disguised as a `Float32Array` (its prototype swapped; indexing still reads
 * doubles), to check that the estimators themselves compute in float64 exactly as verl does.
 */
export type Precision = 'float32' | 'float64'

function float64Disguised(values: readonly number[]): Float32Array {
  return Object.setPrototypeOf(Float64Array.from(values), Float32Array.prototype) as Float32Array
}

/**
 * Tolerances. With float32 inputs the inputs themselves are off by up to 6e-8 relative, and whitening
 * turns that into absolute errors of up to ~6e-8 on unit-scale outputs: 1e-6 relative plus 1e-7
 * absolute. With float64 inputs only the float32 rounding of the outputs remains (2^-24 relative).
 */
export const tolerances: Record<Precision, { relative: number; absolute: number }> = {
  float32: { relative: 1e-6, absolute: 1e-7 },
  float64: { relative: 1e-7, absolute: 1e-12 },
}

/** Asserts that ragged float32 rows match the leading entries of verl's float64 rows. */
export function expectRowsClose(actual: readonly Float32Array[], expected: readonly number[][], label: string, tolerance = tolerances.float32): void {
  expect(actual.length, `${label}: number of samples`).toBe(expected.length)
  actual.forEach((row, sample) => {
    const reference = expected[sample]!
    expect(row.length, `${label}[${sample}]: length`).toBeLessThanOrEqual(reference.length)
    row.forEach((value, token) => {
      const target = reference[token]!
      const error = Math.abs(value - target)
      if (!(error <= tolerance.relative * Math.abs(target) + tolerance.absolute)) {
        expect.fail(`${label}[${sample}][${token}] = ${value}, verl: ${target} (error ${error.toExponential(2)})`)
      }
    })
  })
}

/**
 * One test per fixture case and layout. `estimatorFor` makes the estimator for a case's parameters, or
 * returns undefined for cases that belong to another estimator (e.g. GRPO's Dr. GRPO cases).
 */
export function describeVerlFixture(name: FixtureName, estimatorFor: (params: VerlCase['params']) => AdvantageEstimatorV1 | undefined): void {
  const fixture = loadConformanceFixture<VerlCase['inputs'], VerlCase['params'], NonNullable<VerlCase['outputs']>>(name)
  describe(`verl fixture ${fixture.function}`, () => {
    const cases = fixture.cases.flatMap((verlCase) => {
      const estimator = estimatorFor(verlCase.params)
      return estimator === undefined ? [] : [{ verlCase, estimator }]
    })
    it('has cases for this estimator', () => expect(cases.length).toBeGreaterThan(0))
    const variants = [
      ['ragged', 'float32'],
      ['masked', 'float32'],
      ['masked', 'float64'],
    ] as const
    for (const [layout, precision] of variants) {
      for (const { verlCase, estimator } of cases) {
        const tags = verlCase.tags === undefined ? '' : ` [${verlCase.tags.join(', ')}]`
        it(`${verlCase.id} (${layout}, ${precision} inputs)${tags}`, () => {
          const batch = toAdvantageBatch(verlCase.inputs, layout, precision)
          if (verlCase.error !== undefined) {
            expect(() => estimator.estimate(batch)).toThrow(InvalidArgumentError)
            return
          }
          const outputs = verlCase.outputs!
          const result = estimator.estimate(batch)
          expectRowsClose(result.advantages, outputs.advantages, 'advantages', tolerances[precision])
          expectRowsClose(result.returns, outputs.returns, 'returns', tolerances[precision])
        })
      }
    }
  })
}
