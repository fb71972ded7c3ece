import { createRandom } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createRloo } from './rloo.js'
import { randomBatch } from './test/random-batch.js'
import { describeVerlFixture } from './test/verl-fixtures.js'

describeVerlFixture('verl/compute_rloo_outcome_advantage', () => createRloo())

describe('rloo', () => {
  it("subtracts the mean of the OTHER samples of the group, never the sample's own reward", () => {
    const random = createRandom(4)
    for (let trial = 0; trial < 50; trial++) {
      const batch = randomBatch(random, { samples: 1 + random.nextInt(16), maxLength: 6, groups: 1 + random.nextInt(4) })
      const scores = batch.tokenRewards.map((row) => row.reduce((sum, value) => sum + value, 0))
      const { advantages } = createRloo().estimate(batch)
      scores.forEach((score, sample) => {
        const others = scores.filter((_, other) => other !== sample && batch.groupIds[other] === batch.groupIds[sample])
        const baseline = others.length === 0 ? 0 : others.reduce((sum, value) => sum + value, 0) / others.length
        expect(advantages[sample]![0]).toBeCloseTo(score - baseline, 6)
      })
    }
  })

  it('rejects options it does not take', () => {
    expect(() => createRloo({ epsilon: 1e-6 } as never)).toThrow(/Invalid argument 'options'/)
  })
})
