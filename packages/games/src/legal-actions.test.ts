import { describe, expect, it } from 'vitest'
import { legalActionsFromObservation } from './legal-actions.js'
import { playEpisode } from './play-episode.js'
import { createRandomPolicy } from './random-policy.js'
import { createGame, gameIds } from './registry.js'

describe('legalActionsFromObservation', () => {
  it.each(gameIds.filter((id) => id !== 'simple-negotiation-v1'))('reads exactly the legal actions of %s at every turn', (id) => {
    const environment = createGame(id)
    for (let seed = 0; seed < 15; seed++) {
      let view = environment.reset(seed)
      for (let turn = 0; turn < 300; turn++) {
        const actions = legalActionsFromObservation(view.observation)
        expect(actions).toEqual(view.legalActions)
        const outcome = environment.step(actions[(seed * 7 + turn * 3) % actions.length]!)
        expect(outcome.info.invalidAction).toBeUndefined()
        if (outcome.done) break
        view = outcome.next!
      }
    }
  })

  it('gives a negotiation menu whose every move is valid', () => {
    const environment = createGame('simple-negotiation-v1')
    for (let seed = 0; seed < 40; seed++) {
      let view = environment.reset(seed)
      for (let turn = 0; ; turn++) {
        const menu = legalActionsFromObservation(view.observation)
        expect(menu).toContain('[Deny]')
        expect(menu.some((move) => move.startsWith('[Offer: '))).toBe(true)
        const outcome = environment.step(menu[(seed * 5 + turn * 11) % menu.length]!)
        expect(outcome.info.invalidAction).toBeUndefined()
        if (outcome.done) break
        view = outcome.next!
      }
    }
  })

  it('offers [Accept] only when an offer is open and affordable', () => {
    const environment = createGame('simple-negotiation-v1')
    environment.reset(0)
    expect(legalActionsFromObservation(environment.step('[Offer: 1 Wood -> 2 Gold]').next!.observation)).toContain('[Accept]')
    environment.reset(0)
    expect(legalActionsFromObservation(environment.step('[Offer: 1 Wood -> 11 Gold]').next!.observation)).not.toContain('[Accept]')
  })

  it('throws on text without legal actions', () => {
    expect(() => legalActionsFromObservation('Hello there')).toThrow(/No legal actions/)
  })
})

describe('createRandomPolicy', () => {
  it('plays every game to the end without invalid actions, reproducibly by seed', async () => {
    for (const id of gameIds) {
      const environment = createGame(id)
      const transcript = async (seed: number) => {
        const players = { player0: createRandomPolicy({ seed }), player1: createRandomPolicy({ seed: seed + 100 }) }
        const result = await playEpisode(environment, players, { seed, prompt: 'spiral' })
        expect(result.invalidAction).toBe(false)
        return result
      }
      for (let seed = 0; seed < 5; seed++) {
        const first = await transcript(seed)
        expect((await transcript(seed)).actions).toEqual(first.actions)
        if (!first.truncated) expect(first.rewards.player0! + first.rewards.player1!).toBe(0)
      }
    }
  })

  it('uses a custom legal-action reader and request seeds', async () => {
    const policy = createRandomPolicy({ legalActions: () => ['[a]', '[b]', '[c]'] })
    const request = (seed: number) => ({ messages: [{ role: 'user' as const, content: 'anything' }], maxTokens: 4, seed })
    const texts = async () => (await policy.generate([1, 2, 3, 4, 5, 6, 7, 8].map(request))).map((completion) => completion.text)
    const first = await texts()
    expect(await texts()).toEqual(first)
    expect(new Set(first).size).toBeGreaterThan(1)
    expect(first.every((text) => ['[a]', '[b]', '[c]'].includes(text))).toBe(true)
  })
})
