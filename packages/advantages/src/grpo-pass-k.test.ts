import { describe, expect, it } from 'vitest'
import { createGrpoPassK } from './grpo-pass-k.js'
import { describeVerlFixture } from './test/verl-fixtures.js'

describeVerlFixture('verl/compute_grpo_passk_outcome_advantage', (params) =>
  createGrpoPassK({ epsilon: params.epsilon as number, normalizeByStd: params.norm_adv_by_std_in_grpo as boolean }),
)

describe('grpo-passk', () => {
  it('gives only the best sample of a group its margin over the runner-up', () => {
    const tokenRewards = [Float32Array.of(0.25), Float32Array.of(1), Float32Array.of(0.5), Float32Array.of(1), Float32Array.of(1)]
    const { advantages } = createGrpoPassK({ normalizeByStd: false }).estimate({ tokenRewards, groupIds: ['a', 'a', 'a', 'b', 'b'] })
    expect(advantages.map((row) => row[0])).toEqual([0, 0.5, 0, 0, 0]) // group b ties at the top: 0
  })

  it('needs two samples in every group, and names the group that has one', () => {
    const batch = { tokenRewards: [Float32Array.of(1), Float32Array.of(0), Float32Array.of(1)], groupIds: ['a', 'a', 'lonely'] }
    expect(() => createGrpoPassK().estimate(batch)).toThrow(/'batch\.groupIds\[2\]'.*group 'lonely' has 1/)
  })
})
