import { expect, it } from 'vitest'
import { main } from './main.js'

it('plays seeded Kuhn Poker episodes and prints the exact exploitability of the uniform policy', async () => {
  const lines: string[] = []
  const result = await main({ log: (line) => lines.push(line) })

  expect(result.episodes.map((episode) => episode.seed)).toEqual([1, 2, 3])
  expect(result.episodes.map((episode) => episode.rewards.player0)).toEqual([-3, -3, -1]) // the printed run
  for (const { rewards } of result.episodes) {
    expect(Number.isInteger(rewards.player0)).toBe(true)
    expect(rewards.player0! + rewards.player1!).toBe(0) // net chips: zero-sum
    expect(Math.abs(rewards.player0!)).toBeLessThanOrEqual(10) // at most 2 chips a round over 5 rounds
  }
  // Same seeds, same deals and same opponent draws: the run is reproducible.
  expect((await main({ log: () => {} })).episodes).toEqual(result.episodes)

  expect(result.uniform.nashConv).toBeCloseTo(11 / 12, 12)
  expect(result.uniform.exploitability).toBeCloseTo(11 / 24, 12)
  expect(lines).toHaveLength(4)
  expect(lines[0]).toMatch(/^episode 1: random [+-]?\d+ chips, Nash [+-]?\d+ chips$/)
  expect(lines[3]).toBe('uniform random policy: exploitability 0.4583, NashConv 0.9167')
})
