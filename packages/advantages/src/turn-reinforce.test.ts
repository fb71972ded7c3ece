import type { AdvantageBatch } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createTurnReinforce } from './turn-reinforce.js'

describe('turn-reinforce', () => {
  it("discounts each role's turn rewards over its own later turns: hand-computed example", () => {
    // One two-player trajectory, turns 0..3 alternating, given out of order; γ = 0.9.
    const batch: AdvantageBatch = {
      tokenRewards: [Float32Array.of(0, 1), Float32Array.of(0.5), Float32Array.of(0, 0), Float32Array.of(-1), Float32Array.of(2)],
      tokenMasks: [Uint8Array.of(1, 1), Uint8Array.of(1), Uint8Array.of(1, 0), Uint8Array.of(1), Uint8Array.of(1)],
      groupIds: ['g', 'g', 'g', 'g', 'g'],
      roles: ['player0', 'player1', 'player0', 'player1', 'player0'],
      trajectoryIds: ['t', 't', 't', 't', 'other'],
      turnIndices: [2, 1, 0, 3, 0],
    }
    const { advantages, returns } = createTurnReinforce({ gamma: 0.9 }).estimate(batch)
    // player0: turn 2 → 1, turn 0 → 0 + 0.9·1 = 0.9.  player1: turn 3 → −1, turn 1 → 0.5 + 0.9·(−1) = −0.4.
    // Trajectory 'other' is its own episode: 2. The masked token of turn 0 gets 0.
    const expected = [[1, 1], [-0.4], [0.9, 0], [-1], [2]]
    advantages.forEach((row, sample) => row.forEach((value, token) => expect(value).toBeCloseTo(expected[sample]![token]!, 6)))
    expect(returns).toEqual(advantages)
  })

  it('makes every sample a one-turn episode without trajectory ids', () => {
    const { advantages } = createTurnReinforce().estimate({ tokenRewards: [Float32Array.of(0, 1), Float32Array.of(0.5)], groupIds: ['a', 'a'] })
    expect(advantages.map((row) => [...row])).toEqual([[1, 1], [0.5]])
  })
})
