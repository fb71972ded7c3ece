import { createGame, games } from '@ludic/games'
import { initTensors } from '@ludic/tensors'
import { expect, it } from 'vitest'
import { playOnce, train } from './main.js'

it('registers nim-v0, and a random game ends with +1 for the player who took the last stone', async () => {
  expect(games.names()).toContain('nim-v0')
  const result = await playOnce(3)
  expect(result.invalidAction).toBe(false)
  expect(Object.values(result.rewards).sort()).toEqual([-1, 1])
  const winner = Object.entries(result.rewards).find(([, reward]) => reward === 1)![0]
  expect(result.reason).toBe(`${winner} took the last stone`)
  expect(result.actions.at(-1)!.role).toBe(winner)
  // The pile the moves took is the one reset(3) dealt.
  const taken = result.actions.reduce((total, action) => total + Number(/\[(\d)\]/.exec(action.text)![1]), 0)
  expect(createGame('nim-v0').reset(3).observation).toMatch(new RegExp(`^${taken} stones left`))
})

it('an illegal move loses at once, and step after the end throws', () => {
  const environment = createGame('nim-v0')
  const view = environment.reset(0)
  expect(view.role).toBe('player0')
  expect(view.stateKey).toBe(`player0|${/^(\d+) stones left/.exec(view.observation)![1]} stones`)
  const outcome = environment.step('[4]')
  expect(outcome).toMatchObject({ done: true, rewards: { player0: -1, player1: 1 }, info: { invalidAction: true } })
  expect(() => environment.step('[1]')).toThrow(/after the end/)
})

it('warms up and trains a tiny model on it (tiny budget)', async () => {
  await initTensors({ backend: 'wasm', verbose: false })
  const { before, after } = await train({ warmUpSteps: 2, steps: 1, episodesPerStep: 4, evaluationEpisodes: 4 })
  for (const rate of [before.winRate, after.winRate, before.invalidRate, after.invalidRate]) {
    expect(rate).toBeGreaterThanOrEqual(0)
    expect(rate).toBeLessThanOrEqual(1)
  }
})
