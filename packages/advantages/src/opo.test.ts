import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createOpo } from './opo.js'
import { describeVerlFixture } from './test/verl-fixtures.js'

describeVerlFixture('verl/compute_opo_outcome_advantage', () => createOpo())

describe('opo', () => {
  it('weighs the baseline by the number of valid tokens', () => {
    // Lengths 1 and 3 (one of its 4 tokens masked): b = (1·1 + 3·0) / 4 = 0.25.
    const tokenRewards = [Float32Array.of(1), Float32Array.of(0, 0, 0, 0), Float32Array.of(0.5)]
    const tokenMasks = [Uint8Array.of(1), Uint8Array.of(1, 0, 1, 1), Uint8Array.of(1)]
    const { advantages } = createOpo().estimate({ tokenRewards, tokenMasks, groupIds: ['g', 'g', 'alone'] })
    expect([...advantages[0]!]).toEqual([0.75])
    expect([...advantages[1]!]).toEqual([-0.25, 0, -0.25, -0.25])
    expect([...advantages[2]!]).toEqual([0.5]) // a group of one has baseline 0
  })

  it('throws instead of dividing by zero when a group has no tokens at all', () => {
    const batch = { tokenRewards: [new Float32Array(0), new Float32Array(0)], groupIds: ['g', 'g'] }
    expect(() => createOpo().estimate(batch)).toThrow(InvalidArgumentError)
    expect(() => createOpo().estimate(batch)).toThrow(/batch\.tokenRewards\[0\].*group 'g' have no tokens/)
  })
})
