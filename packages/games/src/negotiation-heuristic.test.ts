import { turnContextOf, type TurnView } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createNegotiationHeuristicPolicy, valueRaisingOffers } from './negotiation-heuristic.js'
import { playEpisode } from './play-episode.js'
import { renderGamePrompt } from './game-prompts.js'
import { createRandomPolicy } from './random-policy.js'
import { createSimpleNegotiation } from './simple-negotiation.js'

const ask = async (policy: ReturnType<typeof createNegotiationHeuristicPolicy>, view: TurnView) =>
  (await policy.generate([{ messages: renderGamePrompt(view, 'spiral'), maxTokens: 32, turn: turnContextOf('simple-negotiation-v1', view) }]))[0]!.text

describe('negotiation heuristic', () => {
  it('lists the trades that raise its own value', () => {
    expect(valueRaisingOffers({ Wood: 10, Gold: 10 }, { Wood: 5, Gold: 15 })).toEqual([
      '[Offer: 1 Wood -> 1 Gold]',
      '[Offer: 1 Wood -> 2 Gold]',
      '[Offer: 1 Wood -> 3 Gold]',
      '[Offer: 2 Wood -> 1 Gold]',
      '[Offer: 2 Wood -> 2 Gold]',
      '[Offer: 2 Wood -> 3 Gold]',
      '[Offer: 3 Wood -> 2 Gold]',
      '[Offer: 3 Wood -> 3 Gold]',
    ])
    expect(valueRaisingOffers({ Wood: 1, Gold: 0 }, { Wood: 15, Gold: 5 })).toEqual([])
  })

  it('accepts offers that raise its value and counters the others', async () => {
    const environment = createSimpleNegotiation()
    const heuristic = createNegotiationHeuristicPolicy({ seed: 1 })
    environment.reset(0)
    // To player1 (Wood 15, Gold 5): receiving 3 Wood for 2 Gold is worth +45 − 10.
    const good = environment.step('[Offer: 3 Wood -> 2 Gold]').next!
    expect(await ask(heuristic, good)).toBe('[Accept]')
    environment.reset(0)
    // Receiving 1 Wood for 4 Gold is worth +15 − 20: counter with a value-raising offer of its own.
    const bad = environment.step('[Offer: 1 Wood -> 4 Gold]').next!
    const counter = await ask(heuristic, bad)
    expect(valueRaisingOffers({ Wood: 10, Gold: 10 }, { Wood: 15, Gold: 5 })).toContain(counter)
  })

  it('plays whole games without invalid actions, reproducibly', async () => {
    const environment = createSimpleNegotiation()
    const results = []
    for (let seed = 0; seed < 30; seed++) {
      const players =
        seed % 2 === 0
          ? { player0: createNegotiationHeuristicPolicy({ seed }), player1: createRandomPolicy({ seed }) }
          : { player0: createNegotiationHeuristicPolicy({ seed }), player1: createNegotiationHeuristicPolicy({ seed: seed + 1 }) }
      const result = await playEpisode(environment, players, { seed })
      expect(result.invalidAction).toBe(false)
      expect(result.turns).toBe(10)
      expect(result.rewards.player0! + result.rewards.player1!).toBe(0)
      results.push(result.actions.map((action) => action.text).join(' '))
    }
    const again = await playEpisode(
      environment,
      { player0: createNegotiationHeuristicPolicy({ seed: 0 }), player1: createRandomPolicy({ seed: 0 }) },
      { seed: 0 },
    )
    expect(again.actions.map((action) => action.text).join(' ')).toBe(results[0])
  })
})
