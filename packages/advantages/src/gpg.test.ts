import { describe, expect, it } from 'vitest'
import { createGpg } from './gpg.js'
import { describeVerlFixture } from './test/verl-fixtures.js'

describeVerlFixture('verl/compute_gpg_outcome_advantage', (params) => createGpg({ normalizationFactor: params.f_norm as number }))

describe('gpg', () => {
  it('scales by α = batch size / number of non-zero rewards, without std normalisation', () => {
    const tokenRewards = [Float32Array.of(0, 1), Float32Array.of(0), Float32Array.of(3), Float32Array.of(0)]
    const { advantages } = createGpg({ normalizationFactor: 2 }).estimate({ tokenRewards, groupIds: ['a', 'a', 'b', 'b'] })
    // α = 4 / 2 = 2; group a: mean 0.5, group b: mean 1.5; A = α·(r − mean) / 2.
    expect(advantages.map((row) => row[0])).toEqual([0.5, -0.5, 1.5, -1.5])
  })
})
