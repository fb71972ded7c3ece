import type { AdvantageBatch } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createGigpo } from './gigpo.js'

/**
 * Group g: trajectories A and B start in the same state s0. A then reaches s1 and wins (reward 1 on
 * its last turn); B reaches s2 and gets 0. Group h: trajectory C, one turn from a state also called s0.
 * The batch is shuffled; turn indices give the order.
 */
const batch: AdvantageBatch = {
  tokenRewards: [Float32Array.of(0, 1), Float32Array.of(0), Float32Array.of(0, 0, 0), Float32Array.of(0), Float32Array.of(0, 1)],
  tokenMasks: [Uint8Array.of(1, 1), Uint8Array.of(1), Uint8Array.of(1, 0, 1), Uint8Array.of(1), Uint8Array.of(1, 1)],
  groupIds: ['g', 'g', 'g', 'g', 'h'],
  trajectoryIds: ['A', 'B', 'A', 'B', 'C'],
  turnIndices: [1, 0, 0, 1, 0],
  stateKeys: ['s1', 's0', 's0', 's2', 's0'],
}
// Hand computation, γ = 0.5:
//   episode returns: A 1, B 0, C 1.  Episode level counts every step: group g holds [1, 1, 0, 0], mean 0.5;
//   group h is a group of one: mean 0.  A^E: A +0.5, B −0.5, C 1.
//   step returns: A1 = 1, A0 = 0 + 0.5·1 = 0.5, B1 = 0, B0 = 0, C0 = 1.
//   step groups: (g, s0) = {A0: 0.5, B0: 0}, mean 0.25; (g, s1), (g, s2), (h, s0) are alone: A^S = 0.
//   A = A^E + ω·A^S with ω = 2:  A1 0.5, B0 −0.5 − 0.5 = −1, A0 0.5 + 0.5 = 1, B1 −0.5, C0 1.

describe('gigpo', () => {
  it('adds episode-level and step-level (same anchor state) group advantages: hand-computed example', () => {
    const { advantages, returns } = createGigpo({ gamma: 0.5, stepWeight: 2 }).estimate(batch)
    expect(advantages.map((row) => [...row])).toEqual([[0.5, 0.5], [-1], [1, 0, 1], [-0.5], [1, 1]])
    expect(returns).toEqual(advantages)
  })

  it('divides by the unbiased standard deviations with normalizeByStd', () => {
    const epsilon = 1e-6
    const { advantages } = createGigpo({ gamma: 0.5, stepWeight: 2, normalizeByStd: true, epsilon }).estimate(batch)
    const episodeStd = Math.sqrt((4 * 0.25) / 3) // [1, 1, 0, 0]
    const stepStd = Math.sqrt((2 * 0.0625) / 1) // [0.5, 0]
    const expected = [
      0.5 / (episodeStd + epsilon),
      -0.5 / (episodeStd + epsilon) + (2 * -0.25) / (stepStd + epsilon),
      0.5 / (episodeStd + epsilon) + (2 * 0.25) / (stepStd + epsilon),
      -0.5 / (episodeStd + epsilon),
      1 / (1 + epsilon),
    ]
    advantages.forEach((row, sample) => expect(row[0]).toBeCloseTo(expected[sample]!, 6))
  })

  it('reads state keys with the stateKey option, or needs batch.stateKeys', () => {
    const { stateKeys, ...withoutKeys } = batch
    const stateKey = (_: AdvantageBatch, sample: number) => stateKeys![sample]!.toUpperCase()
    expect(createGigpo({ gamma: 0.5, stepWeight: 2, stateKey }).estimate(withoutKeys)).toEqual(createGigpo({ gamma: 0.5, stepWeight: 2 }).estimate(batch))
    expect(() => createGigpo().estimate(withoutKeys)).toThrow(/'batch\.stateKeys'.*'gigpo'/)
    expect(() => createGigpo({ stateKey: 's0' as never })).toThrow(/'options\.stateKey'/)
  })

  it('rejects two samples claiming the same turn of a trajectory', () => {
    expect(() => createGigpo().estimate({ ...batch, turnIndices: [1, 0, 1, 1, 0] })).toThrow(/'batch\.turnIndices\[2\]'.*repeats turn 1 of trajectory 'A'/)
  })
})
