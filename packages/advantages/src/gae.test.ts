import { createRandom, InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createGae } from './gae.js'
import { randomBatch } from './test/random-batch.js'
import { describeVerlFixture } from './test/verl-fixtures.js'

describeVerlFixture('verl/compute_gae_advantage_return', (params) => createGae({ gamma: params.gamma as number, lambda: params.lam as number }))

/** GAE as cleanrl writes it: a plain reversed loop per sample, then whitening over all tokens. */
function gaeByLoop(rewards: Float32Array[], values: Float32Array[], gamma: number, lambda: number) {
  const raw = rewards.map((reward, sample) => {
    const value = values[sample]!
    const advantages = new Array<number>(reward.length)
    let lastAdvantage = 0
    for (let t = reward.length - 1; t >= 0; t--) {
      const nextValue = t + 1 < reward.length ? value[t + 1]! : 0
      const delta = reward[t]! + gamma * nextValue - value[t]!
      lastAdvantage = delta + gamma * lambda * lastAdvantage
      advantages[t] = lastAdvantage
    }
    return advantages
  })
  const all = raw.flat()
  const mean = all.reduce((sum, value) => sum + value, 0) / all.length
  const variance = all.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (all.length - 1)
  return {
    advantages: raw.map((row) => row.map((value) => (value - mean) / Math.sqrt(variance))),
    returns: raw.map((row, sample) => row.map((value, t) => value + values[sample]![t]!)),
  }
}

describe('gae', () => {
  it('equals a plain reversed loop on seeded random batches', () => {
    const random = createRandom(1)
    for (let trial = 0; trial < 20; trial++) {
      const batch = randomBatch(random, { samples: 1 + random.nextInt(8), maxLength: 12, groups: 2, denseRewards: true })
      if (batch.tokenRewards.reduce((sum, row) => sum + row.length, 0) < 2) continue
      const gamma = random.nextFloat()
      const lambda = random.nextFloat()
      const result = createGae({ gamma, lambda }).estimate(batch)
      const expected = gaeByLoop(batch.tokenRewards, batch.values!, gamma, lambda)
      result.advantages.forEach((row, sample) => row.forEach((value, t) => expect(value).toBeCloseTo(expected.advantages[sample]![t]!, 5)))
      result.returns.forEach((row, sample) => row.forEach((value, t) => expect(value).toBeCloseTo(expected.returns[sample]![t]!, 5)))
    }
  })

  it('treats masked observation spans as absent: valid tokens get what they get without the span', () => {
    const random = createRandom(2)
    for (let trial = 0; trial < 20; trial++) {
      const batch = randomBatch(random, { samples: 2 + random.nextInt(6), maxLength: 12, groups: 2, masks: true, denseRewards: true })
      const keep = (rows: Float32Array[]) => rows.map((row, sample) => row.filter((_, t) => batch.tokenMasks![sample]![t] === 1))
      const withSpans = createGae({ gamma: 0.9, lambda: 0.8 }).estimate(batch)
      const withoutSpans = createGae({ gamma: 0.9, lambda: 0.8 }).estimate({
        tokenRewards: keep(batch.tokenRewards),
        values: keep(batch.values!),
        groupIds: batch.groupIds,
      })
      keep(withSpans.advantages).forEach((row, sample) => row.forEach((value, t) => expect(value).toBeCloseTo(withoutSpans.advantages[sample]![t]!, 5)))
      keep(withSpans.returns).forEach((row, sample) => row.forEach((value, t) => expect(value).toBeCloseTo(withoutSpans.returns[sample]![t]!, 5)))
    }
  })

  it('needs the critic values, finite and one per token', () => {
    const tokenRewards = [Float32Array.of(0, 1), Float32Array.of(0, 0, 1)]
    const gae = createGae()
    expect(() => gae.estimate({ tokenRewards, groupIds: ['a', 'a'] })).toThrow(/'batch\.values'.*required by the 'gae' estimator/)
    const values = [Float32Array.of(0.5, 0.5), Float32Array.of(0.5, Number.NaN, 0.5)]
    expect(() => gae.estimate({ tokenRewards, groupIds: ['a', 'a'], values })).toThrow(/'batch\.values\[1\]\[1\]' \(value: NaN\)/)
    const short = [Float32Array.of(0.5, 0.5), Float32Array.of(0.5)]
    expect(() => gae.estimate({ tokenRewards, groupIds: ['a', 'a'], values: short })).toThrow(InvalidArgumentError)
  })

  it('checks its options', () => {
    expect(() => createGae({ gamma: 1.5 })).toThrow(/'options\.gamma'/)
    expect(() => createGae({ lam: 0.9 } as never)).toThrow(/options/)
  })
})
