import { createRandom, deriveSeed, type PolicyV1 } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import type { PolicyContext } from '@ludic/rollout'
import { withOpponents } from './opponents.js'

const policy = (id: string) => ({ id }) as unknown as PolicyV1
const self = policy('self')
const opponent = policy('opponent')
const roles = ['player0', 'player1'] as const
const context = (role: string, episodeIndex: number): PolicyContext => ({ role, roles, episodeIndex, environmentId: 'pick', seed: 0, groupIndex: 0 })

/** The role the opponent plays in each of `episodes` episodes, or undefined (self-play): asked role by role, as rollouts do. */
function seated(opponents: Parameters<typeof withOpponents>[1], episodes: number): (string | undefined)[] {
  const policies = withOpponents(self, opponents, 5, 2)
  return Array.from({ length: episodes }, (_, episodeIndex) => {
    const its = roles.filter((role) => policies(context(role, episodeIndex)) === opponent)
    expect(its.length).toBeLessThanOrEqual(1) // one seat an episode, the same whichever role asks
    return its[0]
  })
}

describe('withOpponents', () => {
  it('seats an opponent by a plain draw of the seed, step and episode without seats', () => {
    const share = 0.6
    const expected = Array.from({ length: 400 }, (_, episodeIndex) => {
      const draw = createRandom(deriveSeed('ludic.opponents', 5, 2, episodeIndex))
      const u = draw.nextFloat()
      const seat = roles[draw.nextInt(roles.length)]
      return u < share ? seat : undefined
    })
    expect(seated([{ policy: opponent, share }], 400)).toEqual(expected)
  })

  it("weighs the opponent's role by its seats: 3 to 1 seats it first in about three games of four, a role not named never", () => {
    const weighed = seated([{ policy: opponent, share: 1, seats: { player0: 3, player1: 1 } }], 4000)
    const first = weighed.filter((role) => role === 'player0').length / weighed.length
    // Binomial(4000, 0.75): σ ≈ 0.007, so ±0.03 is more than four σ; the seats alike give 0.5.
    expect(first).toBeGreaterThan(0.72)
    expect(first).toBeLessThan(0.78)
    expect(weighed.every((role) => role !== undefined)).toBe(true)
    const alike = seated([{ policy: opponent, share: 1 }], 4000).filter((role) => role === 'player0').length / 4000
    expect(Math.abs(alike - 0.5)).toBeLessThan(0.03)
    expect(new Set(seated([{ policy: opponent, share: 1, seats: { player1: 2 } }], 500))).toEqual(new Set(['player1']))
    // Only the episodes of its share: a second opponent before it takes the first 0.5.
    const shared = seated(
      [
        { policy: policy('other'), share: 0.5 },
        { policy: opponent, share: 0.5, seats: { player1: 1 } },
      ],
      2000,
    )
    expect(new Set(shared)).toEqual(new Set(['player1', undefined]))
    expect(Math.abs(shared.filter((role) => role === 'player1').length / 2000 - 0.5)).toBeLessThan(0.04)
  })

  it("refuses seats that weigh none of the episode's roles, naming them", () => {
    const policies = withOpponents(self, [{ policy: opponent, share: 1, seats: { user: 1, player1: 0 } }], 5, 2)
    expect(() => policies(context('player0', 0))).toThrow(/opponent\.seats.*weighs none of the episode's roles \(player0, player1\)/)
  })
})
