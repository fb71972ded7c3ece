import { turnContextOf } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { negotiationMenu, turnLegalActions } from './legal-actions.js'
import { playEpisode } from './play-episode.js'
import { createRandomPolicy } from './random-policy.js'
import { createGame, gameIds } from './registry.js'
import { negotiationTurnState, parseNegotiationObservation } from './simple-negotiation.js'

describe('turnLegalActions', () => {
  it.each(gameIds.filter((id) => id !== 'simple-negotiation-v1'))("gives exactly the environment's legal actions of %s at every turn", (id) => {
    const environment = createGame(id)
    for (let seed = 0; seed < 15; seed++) {
      let view = environment.reset(seed)
      for (let turn = 0; turn < 300; turn++) {
        const actions = turnLegalActions(turnContextOf(id, view))
        expect(actions).toEqual(view.legalActions)
        const outcome = environment.step(actions[(seed * 7 + turn * 3) % actions.length]!)
        expect(outcome.info.invalidAction).toBeUndefined()
        if (outcome.done) break
        view = outcome.next!
      }
    }
  })

  it("gives a negotiation menu from the turn's state whose every move is valid; the state is what the text says", () => {
    const environment = createGame('simple-negotiation-v1')
    for (let seed = 0; seed < 40; seed++) {
      let view = environment.reset(seed)
      for (let turn = 0; ; turn++) {
        // The structured state and the game's own parser of its text agree (the state is not a second truth).
        expect(negotiationTurnState(view.state)).toEqual(parseNegotiationObservation(view.observation))
        const menu = turnLegalActions(turnContextOf(environment.id, view))
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
    expect(negotiationMenu(negotiationTurnState(environment.step('[Offer: 1 Wood -> 2 Gold]').next!.state))).toContain('[Accept]')
    environment.reset(0)
    expect(negotiationMenu(negotiationTurnState(environment.step('[Offer: 1 Wood -> 11 Gold]').next!.state))).not.toContain('[Accept]')
  })

  it('refuses a turn without what it needs, naming the missing field', () => {
    expect(() => turnLegalActions(undefined)).toThrow(expect.objectContaining({ name: 'InvalidArgumentError', argument: 'request.turn' }))
    expect(() => turnLegalActions({ environmentId: 'x-v0', role: 'a' })).toThrow(expect.objectContaining({ argument: 'request.turn.legalActions' }))
    expect(() => turnLegalActions({ environmentId: 'x-v0', role: 'a', legalActions: [] })).toThrow(
      expect.objectContaining({ argument: 'request.turn.legalActions' }),
    )
    expect(() => turnLegalActions({ environmentId: 'simple-negotiation-v1', role: 'player0' })).toThrow(
      expect.objectContaining({ argument: 'request.turn.state' }),
    )
    expect(() => turnLegalActions({ environmentId: 'simple-negotiation-v1', role: 'player0', state: { player: 0 } })).toThrow(
      expect.objectContaining({ name: 'InvalidArgumentError', argument: 'request.turn.state.turn' }),
    )
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

  it("draws from the request's turn, not from the prompt's text", async () => {
    const policy = createRandomPolicy({ seed: 3 })
    const turn = { environmentId: 'coin-v0', role: 'player0', legalActions: ['[heads]', '[tails]'] }
    const misleading = { role: 'user' as const, content: 'Available actions: [rock], [paper], [scissors]' }
    const texts = (await policy.generate([1, 2, 3, 4, 5, 6].map((seed) => ({ messages: [misleading], maxTokens: 4, seed, turn })))).map((c) => c.text)
    expect(texts.every((text) => text === '[heads]' || text === '[tails]')).toBe(true)
    await expect(policy.generate([{ messages: [misleading], maxTokens: 4 }])).rejects.toMatchObject({ name: 'InvalidArgumentError', argument: 'request.turn' })
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
