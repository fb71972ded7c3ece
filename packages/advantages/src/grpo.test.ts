import { createRandom } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createGrpo } from './grpo.js'
import { randomBatch } from './test/random-batch.js'
import { describeVerlFixture } from './test/verl-fixtures.js'

describeVerlFixture('verl/compute_grpo_outcome_advantage', (params) =>
  createGrpo({ epsilon: params.epsilon as number, normalizeByStd: params.norm_adv_by_std_in_grpo as boolean }),
)

describe('grpo', () => {
  it('gives advantages with zero mean in every group of two or more (seeded random batches)', () => {
    const random = createRandom(3)
    for (let trial = 0; trial < 50; trial++) {
      const batch = randomBatch(random, { samples: 2 + random.nextInt(20), maxLength: 8, groups: 1 + random.nextInt(4), masks: true })
      const { advantages, returns } = createGrpo().estimate(batch)
      const sums = new Map<string, { sum: number; count: number }>()
      advantages.forEach((row, sample) => {
        const last = row.findLastIndex((_, t) => batch.tokenMasks![sample]![t] === 1)
        const group = sums.get(batch.groupIds[sample]!) ?? { sum: 0, count: 0 }
        sums.set(batch.groupIds[sample]!, { sum: group.sum + row[last]!, count: group.count + 1 })
        row.forEach((value, t) => expect(value).toBe(batch.tokenMasks![sample]![t] === 1 ? row[last] : 0)) // one value per sample
      })
      for (const { sum, count } of sums.values()) if (count > 1) expect(Math.abs(sum)).toBeLessThan(1e-5)
      expect(returns).toEqual(advantages)
    }
  })

  it('divides a group of one by 1 + ε instead of zeroing it, and gives identical scores 0', () => {
    const tokenRewards = [Float32Array.of(0, 0.5), Float32Array.of(1), Float32Array.of(0, 1)]
    const { advantages } = createGrpo({ epsilon: 0.25 }).estimate({ tokenRewards, groupIds: ['alone', 'pair', 'pair'] })
    expect([...advantages[0]!]).toEqual([Math.fround(0.4), Math.fround(0.4)])
    expect([...advantages[1]!, ...advantages[2]!]).toEqual([0, 0, 0])
  })

  it('sums the token rewards of a sample, masked tokens included (verl)', () => {
    const tokenRewards = [Float32Array.of(1, 0, 1), Float32Array.of(0, 0, 0)]
    const tokenMasks = [Uint8Array.of(1, 0, 1), Uint8Array.of(1, 1, 1)]
    const { advantages } = createGrpo({ normalizeByStd: false }).estimate({ tokenRewards, tokenMasks, groupIds: ['a', 'a'] })
    expect([...advantages[0]!]).toEqual([1, 0, 1]) // score 2, mean 1; the masked token gets 0
    expect([...advantages[1]!]).toEqual([-1, -1, -1])
  })
})
