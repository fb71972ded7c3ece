import { describe, expect, it } from 'vitest'
import { createReinforcePlusPlusBaseline } from './reinforce-plus-plus-baseline.js'
import { describeVerlFixture } from './test/verl-fixtures.js'

// verl's epsilon is unused by this estimator.
describeVerlFixture('verl/compute_reinforce_plus_plus_baseline_outcome_advantage', () => createReinforcePlusPlusBaseline())

describe('reinforce++-baseline', () => {
  it('centres on the group mean, then whitens over tokens, so longer samples weigh more', () => {
    const tokenRewards = [Float32Array.of(0, 0, 1), Float32Array.of(0)]
    const { advantages } = createReinforcePlusPlusBaseline().estimate({ tokenRewards, groupIds: ['g', 'g'] })
    // Centred: +0.5 on 3 tokens, −0.5 on 1 token; the token mean is 0.25, so the short sample moves further.
    expect(advantages[0]![0]).toBeGreaterThan(0)
    expect(Math.abs(advantages[1]![0]!)).toBeGreaterThan(Math.abs(advantages[0]![0]!))
    const tokens = [...advantages[0]!, ...advantages[1]!]
    expect(tokens.reduce((sum, value) => sum + value, 0)).toBeCloseTo(0, 5)
  })
})
