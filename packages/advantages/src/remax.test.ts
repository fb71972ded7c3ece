import { describe, expect, it } from 'vitest'
import { createRemax } from './remax.js'
import { describeVerlFixture } from './test/verl-fixtures.js'

describeVerlFixture('verl/compute_remax_outcome_advantage', () => createRemax())

describe('remax', () => {
  it("subtracts the greedy response's reward from the undiscounted return-to-go", () => {
    const tokenRewards = [Float32Array.of(0.5, 0, 1), Float32Array.of(0, 0.25)]
    const { advantages, returns } = createRemax().estimate({ tokenRewards, groupIds: ['a', 'b'], baselineRewards: [1, 0.25] })
    expect([...returns[0]!]).toEqual([1.5, 1, 1])
    expect([...advantages[0]!]).toEqual([0.5, 0, 0])
    expect([...advantages[1]!]).toEqual([0, 0])
  })

  it('needs the greedy baselines', () => {
    expect(() => createRemax().estimate({ tokenRewards: [Float32Array.of(1)], groupIds: ['a'] })).toThrow(/'batch\.baselineRewards'.*'remax'/)
  })
})
