import { createRandom } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createDrGrpo } from './dr-grpo.js'
import { createGrpo } from './grpo.js'
import { randomBatch } from './test/random-batch.js'
import { describeVerlFixture } from './test/verl-fixtures.js'

// verl's GRPO with norm_adv_by_std_in_grpo=False is Dr. GRPO; its epsilon is unused there.
describeVerlFixture('verl/compute_grpo_outcome_advantage', (params) => (params.norm_adv_by_std_in_grpo === false ? createDrGrpo() : undefined))

describe('dr-grpo', () => {
  it('is GRPO without the division by the standard deviation', () => {
    const batch = randomBatch(createRandom(5), { samples: 12, maxLength: 5, groups: 3, masks: true })
    const drGrpo = createDrGrpo()
    expect(drGrpo.name).toBe('dr-grpo')
    expect(drGrpo.estimate(batch)).toEqual(createGrpo({ normalizeByStd: false }).estimate(batch))
    const scores = batch.tokenRewards.map((row) => row.reduce((sum, value) => sum + value, 0))
    const sample = batch.groupIds.findIndex((id, index) => batch.groupIds.indexOf(id) !== index) // in a group of 2+
    const group = scores.filter((_, other) => batch.groupIds[other] === batch.groupIds[sample])
    const mean = group.reduce((sum, value) => sum + value, 0) / group.length
    expect(drGrpo.estimate(batch).advantages[sample]![0]).toBeCloseTo(scores[sample]! - mean, 6)
  })
})
