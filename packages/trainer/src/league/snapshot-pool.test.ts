import { createRandom, InvalidArgumentError } from '@ludic/core'
import { fitBradleyTerry } from '@ludic/roleplay'
import { describe, expect, it } from 'vitest'
import { PoolRatings } from './pool-ratings.js'
import { SnapshotPool, snapshotPoolConfigSchema, type SnapshotPoolConfig } from './snapshot-pool.js'

const poolOf = (config: Partial<SnapshotPoolConfig> = {}) => new SnapshotPool(snapshotPoolConfigSchema.parse({ pool: 'snapshots', share: 1, ...config }))

/** Draw frequencies of `draws` draws, by member step. */
function frequencies(pool: SnapshotPool, draws: number, seed: number): Map<number, number> {
  const random = createRandom(seed)
  const counts = new Map<number, number>()
  for (let index = 0; index < draws; index++) {
    const step = pool.draw(random)
    counts.set(step, (counts.get(step) ?? 0) + 1)
  }
  return new Map([...counts].map(([step, count]) => [step, count / draws]))
}

describe('snapshotPoolConfigSchema', () => {
  it('fills the documented defaults and refuses wrong fields by name', () => {
    expect(snapshotPoolConfigSchema.parse({ pool: 'snapshots', share: 0.8 })).toEqual({
      pool: 'snapshots',
      share: 0.8,
      every: 10,
      keep: 20,
      sampling: 'uniform',
      pfspWeighting: 'squared',
      winRateWindow: 64,
      ratingWindow: 2000,
      maxBytes: 1024 ** 3,
    })
    for (const [field, value] of [
      ['sampling', 'best'],
      ['every', 0],
      ['keep', 1.5],
      ['pfspWeighting', 'cubic'],
      ['share', 0],
    ] as const) {
      const result = snapshotPoolConfigSchema.safeParse({ pool: 'snapshots', share: 0.5, [field]: value })
      expect(result.success, field).toBe(false)
      expect(result.error!.issues[0]!.path).toEqual([field])
    }
    expect(snapshotPoolConfigSchema.safeParse({ pool: 'snapshots', share: 0.5, keepLast: 3 }).success).toBe(false)
  })
})

describe('SnapshotPool', () => {
  it('takes a snapshot at step 0 and every `every` steps, and keeps the newest `keep`, dropping the oldest', () => {
    const pool = poolOf({ every: 3, keep: 2 })
    const taken: number[] = []
    const dropped: number[] = []
    for (let step = 0; step < 10; step++) {
      if (pool.isDue(step)) {
        taken.push(step)
        dropped.push(...pool.add(step))
      }
      expect(pool.isDue(step)).toBe(false) // not twice in a step (the greedy baselines' rollout)
    }
    expect(taken).toEqual([0, 3, 6, 9])
    expect(dropped).toEqual([0, 3])
    expect(pool.all.map((member) => member.step)).toEqual([6, 9])
    expect(() => pool.add(9)).toThrow(InvalidArgumentError)
  })

  it('is due at once when empty (a resumed run whose checkpoint had no league)', () => {
    expect(poolOf({ every: 10 }).isDue(7)).toBe(true)
  })

  it('draws uniformly, by recency and by PFSP with the probabilities of a plain-loop reference', () => {
    const steps = [0, 10, 20, 30]
    // The learner's games against each member: wins, ties, losses.
    const games: Record<number, number[]> = { 0: [1, 1, 1, 1, 0.5], 10: [1, 0, 0.5], 20: [0, 0, 0, 1], 30: [] }
    for (const sampling of ['uniform', 'recency', 'pfsp'] as const) {
      for (const pfspWeighting of ['squared', 'variance'] as const) {
        const pool = poolOf({ sampling, pfspWeighting, keep: 10 })
        for (const step of steps) pool.add(step)
        for (const step of steps) for (const score of games[step]!) pool.record(step, score)
        // The reference: weights written out one member at a time.
        const reference: number[] = []
        for (let index = 0; index < steps.length; index++) {
          const scores = games[steps[index]!]!
          let total = 0
          for (const score of scores) total += score
          const x = (total + 1) / (scores.length + 2)
          let weight = 1
          if (sampling === 'recency') weight = index + 1
          if (sampling === 'pfsp') weight = pfspWeighting === 'squared' ? (1 - x) * (1 - x) : x * (1 - x)
          reference.push(weight)
        }
        let sum = 0
        for (const weight of reference) sum += weight
        const expected = reference.map((weight) => weight / sum)
        const probabilities = pool.probabilities()
        probabilities.forEach((probability, index) => expect(probability).toBeCloseTo(expected[index]!, 12))
        // The draws follow them (20 000 draws: a standard error below 0.004).
        const seen = frequencies(pool, 20_000, 5)
        steps.forEach((step, index) => expect(Math.abs((seen.get(step) ?? 0) - expected[index]!)).toBeLessThan(0.015))
      }
    }
  })

  it('PFSP favours the members the learner loses to (squared) or those near its level (variance)', () => {
    const pool = poolOf({ sampling: 'pfsp', keep: 10 })
    pool.add(0)
    pool.add(1)
    pool.add(2)
    for (let game = 0; game < 8; game++) {
      pool.record(0, 1) // beaten every time
      pool.record(1, game % 2) // even
      pool.record(2, 0) // beats the learner
    }
    const [beaten, even, strong] = pool.probabilities()
    expect(strong!).toBeGreaterThan(even!)
    expect(even!).toBeGreaterThan(beaten!)
    expect(beaten!).toBeGreaterThan(0) // smoothed: never dropped entirely
    const variance = poolOf({ sampling: 'pfsp', pfspWeighting: 'variance', keep: 10 })
    variance.setState(pool.getState())
    const [vBeaten, vEven, vStrong] = variance.probabilities()
    expect(vEven!).toBeGreaterThan(vBeaten!)
    expect(vEven!).toBeGreaterThan(vStrong!)
  })

  it('keeps each win record within winRateWindow and smooths it (½ before any game)', () => {
    const pool = poolOf({ winRateWindow: 4, keep: 5 })
    pool.add(0)
    expect(pool.winRate(0)).toBe(0.5)
    for (const score of [0, 0, 0, 1, 1, 1, 1]) pool.record(0, score)
    expect(pool.all[0]!.scores).toEqual([1, 1, 1, 1])
    expect(pool.winRate(0)).toBeCloseTo(5 / 6, 12)
    pool.record(99, 1) // a dropped member's game is ignored
    expect(() => pool.winRate(99)).toThrow(/no member of the pool/)
  })

  it('draws the same members for the same seed, and restores its state exactly', () => {
    const pool = poolOf({ sampling: 'pfsp', keep: 3 })
    for (const step of [0, 5, 10, 15]) pool.add(step)
    pool.record(10, 0)
    pool.record(15, 1)
    const draws = (from: SnapshotPool) => {
      const random = createRandom(42)
      return Array.from({ length: 50 }, () => from.draw(random))
    }
    const again = poolOf({ sampling: 'pfsp', keep: 3 })
    again.setState(JSON.parse(JSON.stringify(pool.getState())))
    expect(again.getState()).toEqual(pool.getState())
    expect(draws(again)).toEqual(draws(pool))
    expect(() => again.setState({ members: [{ step: -1, scores: [] }] } as never)).toThrow(/state\.members\.0\.step/)
  })
})

describe('PoolRatings', () => {
  it("fits CharacterArena's Bradley–Terry ratings to the last `window` games", () => {
    const ratings = new PoolRatings(4, 'learner')
    expect(ratings.ratings()).toEqual({})
    const games = [
      { opponent: 'snapshot-0', score: 1 },
      { opponent: 'snapshot-0', score: 1 },
      { opponent: 'snapshot-10', score: 0 },
      { opponent: 'random', score: 0.5 },
      { opponent: 'snapshot-10', score: 0 },
    ] as const
    for (const game of games) ratings.record(game)
    expect(ratings.size).toBe(4)
    const outcome = (score: number) => (score === 1 ? 'a' : score === 0 ? 'b' : 'tie')
    const expected = fitBradleyTerry(games.slice(1).map(({ opponent, score }) => ({ a: 'learner', b: opponent, outcome: outcome(score) })))
    expect(ratings.ratings()).toEqual(expected.ratings)
    expect(expected.ratings['snapshot-10']!).toBeGreaterThan(expected.ratings['snapshot-0']!)
    const restored = new PoolRatings(4, 'learner')
    restored.setState(JSON.parse(JSON.stringify(ratings.getState())))
    expect(restored.ratings()).toEqual(ratings.ratings())
    expect(() => restored.setState([{ opponent: 'x', score: 0.3 }])).toThrow(/state\.games\.0\.score/)
  })
})
