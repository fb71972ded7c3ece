import { InvalidArgumentError, type AdvantageBatch } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { groupStatistics, maskedWhiten } from './statistics.js'

const batchOf = (rows: number[][], masks?: number[][]): AdvantageBatch => ({
  tokenRewards: rows.map((row) => new Float32Array(row.length)),
  groupIds: rows.map(() => 'g'),
  ...(masks === undefined ? {} : { tokenMasks: masks.map((mask) => Uint8Array.from(mask)) }),
})

const expectRelativelyClose = (actual: ArrayLike<number>, expected: readonly number[]) => {
  expect(actual.length).toBe(expected.length)
  expected.forEach((value, index) => expect(Math.abs(actual[index]! - value)).toBeLessThanOrEqual(1e-13 * Math.abs(value)))
}

// Expected values computed in Python float64 with verl's formulas.
describe('maskedWhiten (verl masked_whiten)', () => {
  it('adds 1e-8 to the variance: a tiny spread is not blown up to ±1', () => {
    const rows = [Float64Array.of(0, 1e-4)]
    expectRelativelyClose(maskedWhiten(rows, batchOf([[0, 0]]))[0]!, [-0.4082482887628285, 0.40824829284531133])
  })

  it('adds 1e-8 to the token count of the mean: large values are not centred exactly', () => {
    const rows = [Float64Array.of(1e6, 1e6 + 2)]
    expectRelativelyClose(maskedWhiten(rows, batchOf([[0, 0]]))[0]!, [-0.7035624493271395, 0.7106334356733583])
  })

  it('whitens identical values to 1e-4, not 0 (the same +1e-8 placements), never NaN', () => {
    const rows = [Float64Array.of(3, 3), Float64Array.of(3)]
    const [first, second] = maskedWhiten(rows, batchOf([[0, 0], [0]]))
    expectRelativelyClose([...first!, ...second!], [9.999999864225293e-5, 9.999999864225293e-5, 9.999999864225293e-5])
  })

  it('takes statistics over valid tokens only, but transforms every token', () => {
    const rows = [Float64Array.of(0, 100, 1e-4)]
    const whitened = maskedWhiten(rows, batchOf([[0, 0, 0]], [[1, 0, 1]]))[0]!
    expectRelativelyClose([whitened[0]!, whitened[2]!], [-0.4082482887628285, 0.40824829284531133])
    expect(whitened[1]).toBeGreaterThan(1e5) // (100 − mean)·rsqrt(var + 1e-8), as verl leaves it
  })

  it('throws, like verl, when the batch has fewer than 2 valid tokens', () => {
    expect(() => maskedWhiten([Float64Array.of(1)], batchOf([[0]]))).toThrow(InvalidArgumentError)
    expect(() => maskedWhiten([Float64Array.of(1, 2), new Float64Array(0)], batchOf([[0, 0], []], [[0, 1], []]))).toThrow(
      /at least 2 valid tokens in the batch, got 1/,
    )
  })
})

describe('groupStatistics', () => {
  it('uses the unbiased standard deviation, and mean 0, std 1 for a group of one', () => {
    const statistics = groupStatistics(Float64Array.of(1, 5, 2, 3), ['a', 'b', 'a', 'a'])
    expect([...statistics.mean]).toEqual([2, 0, 2, 2])
    expect([...statistics.std]).toEqual([1, 1, 1, 1]) // sqrt(((1−2)² + 0 + (3−2)²) / 2) = 1
    expect([...statistics.size]).toEqual([3, 1, 3, 3])
  })
})
