import { describe, expect, it } from 'vitest'
import { createReinforcePlusPlus } from './reinforce-plus-plus.js'
import { describeVerlFixture } from './test/verl-fixtures.js'

describeVerlFixture('verl/compute_reinforce_plus_plus_outcome_advantage', (params) => createReinforcePlusPlus({ gamma: params.gamma as number }))

describe('reinforce++', () => {
  it('discounts over valid tokens only: a masked span carries the running return through', () => {
    const tokenRewards = [Float32Array.of(0, 0, 0, 1), Float32Array.of(0, 1)]
    const tokenMasks = [Uint8Array.of(1, 0, 0, 1), Uint8Array.of(1, 1)]
    const { advantages, returns } = createReinforcePlusPlus({ gamma: 0.5 }).estimate({ tokenRewards, tokenMasks, groupIds: ['a', 'b'] })
    expect([...returns[0]!]).toEqual([0.5, 0, 0, 1])
    expect([...returns[1]!]).toEqual([0.5, 1])
    expect([advantages[0]![1], advantages[0]![2]]).toEqual([0, 0])
    expect(advantages[0]![0]).toBeCloseTo(advantages[1]![0]!, 6) // same return, same whitened advantage
  })

  it('throws when the batch has a single valid token, as verl does', () => {
    expect(() => createReinforcePlusPlus().estimate({ tokenRewards: [Float32Array.of(1)], groupIds: ['a'] })).toThrow(/at least 2 valid tokens/)
  })
})
