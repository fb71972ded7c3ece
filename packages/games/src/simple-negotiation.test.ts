import { stepOutcomeSchema, type StepOutcome } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createSimpleNegotiation, parseNegotiationObservation } from './simple-negotiation.js'

const firstObservation = `[GAME] You are Player 0 in the Negotiation Game.
You have some resources, and your task is to trade such that the total value of your resources increases.
The resources and associated values you currently have are:
\t+ [Wood]    Qty: 10   Value: 5
\t+ [Gold]    Qty: 10   Value: 15
At each turn, you can talk to your opponent or make a trade offer.
Use the following special tokens for actions:
  - [Offer]: To make a trade offer.
    Format: [Offer: Offered Resources -> Requested Resources]
    Example: [Offer: 3 Wood -> 2 Gold]
  - [Accept]: To accept an incoming offer.
  - [Deny]: To deny an incoming offer (default).
YOU CAN INCLUDE ADDITIONAL TEXT BEFORE AND/OR AFTER THESE TOKENS.
    Example: "I'm open to negotiation."
Every action must contain one of these tokens (the last one counts).
The game lasts for 10 turns in total.
[GAME] Turn 1 of 10. Your resources: Wood 10, Gold 10 (total value 200; you started with 200).
No offer is open to you.
Your available actions are: [Offer: <your resources> -> <requested resources>], or [Deny] to pass`

/** Plays the actions in order and returns every outcome. */
function play(actions: readonly string[], options = {}): StepOutcome[] {
  const environment = createSimpleNegotiation(options)
  environment.reset(0)
  return actions.map((action) => stepOutcomeSchema.parse(environment.step(action)))
}
const passes = (count: number) => new Array<string>(count).fill('[Deny]')

describe('Simple Negotiation', () => {
  it("shows SPIRAL's prompt, the player's resources and what it may do", () => {
    const environment = createSimpleNegotiation()
    const view = environment.reset(0)
    expect(view).toEqual({
      role: 'player0',
      observation: firstObservation,
      stateKey: 'player0|turn 1|Wood 10, Gold 10|offer none',
      state: { player: 0, turn: 1, turns: 10, values: { Wood: 5, Gold: 15 }, inventory: { Wood: 10, Gold: 10 } },
    })
    const next = environment.step('I value gold. Let us trade. [Offer: 3 Wood -> 2 Gold]').next!
    expect(next.role).toBe('player1')
    expect(next.observation).toContain('\t+ [Wood]    Qty: 10   Value: 15\n\t+ [Gold]    Qty: 10   Value: 5\n')
    expect(
      next.observation.endsWith(
        '[Player 0] [Offer: 3 Wood -> 2 Gold]\n' +
          '[GAME] Player 0 made the following offer to Player 1: Offered items: 3 Wood -> Requested items: 2 Gold\n' +
          '[GAME] Turn 2 of 10. Your resources: Wood 10, Gold 10 (total value 200; you started with 200).\n' +
          'Open offer to you from Player 0: Offered items: 3 Wood -> Requested items: 2 Gold\n' +
          'Your available actions are: [Accept], [Deny], or a counter-offer [Offer: <your resources> -> <requested resources>]',
      ),
    ).toBe(true)
    expect(next.observation).not.toContain('I value gold') // only the move is shown, never the reasoning
  })

  it('trades on [Accept] and ends after 10 actions: more units wins', () => {
    // player0 gives 3 Wood for 2 Gold: ΔV0 = −15 + 30 = +15, ΔV1 = +45 − 10 = +35; player0 has fewer units.
    const outcomes = play(['[Offer: 3 Wood -> 2 Gold]', 'Deal. [Accept]', ...passes(8)])
    const after = outcomes[1]!.next!
    expect(after.observation).toContain('[Player 1] [Accept]\n[GAME] Player 1 accepted the trade offer from Player 0.')
    expect(parseNegotiationObservation(after.observation).inventory).toEqual({ Wood: 7, Gold: 12 })
    expect(outcomes.slice(0, 9).every((outcome) => !outcome.done)).toBe(true)
    expect(outcomes[9]).toMatchObject({ done: true, truncated: false, rewards: { player0: -1, player1: 1 } })
    expect(outcomes[9]!.info.reason).toBe('Player 1 won by having a larger gain in inventory value (Player 0: 15, Player 1: 35).')
  })

  it('checks the identity ΔV0 − ΔV1 = 20·(ΔWood0 + ΔGold0) on a winning trade for player0', () => {
    // player0 gives 1 Wood for 2 Gold: it ends with one unit more, so it wins.
    const outcomes = play(['[Offer: 1 Wood -> 2 Gold]', '[Accept]', ...passes(8)])
    expect(outcomes[9]!.rewards).toEqual({ player0: 1, player1: -1 })
    expect(outcomes[9]!.info.reason).toContain('(Player 0: 25, Player 1: 5)') // 25 − 5 = 20 · 1
  })

  it('draws without a trade, and on an even swap', () => {
    expect(play(passes(10))[9]).toMatchObject({ done: true, rewards: { player0: 0, player1: 0 } })
    const swap = play(['[Offer: 2 Wood -> 2 Gold]', '[Accept]', ...passes(8)])
    expect(swap[9]!.rewards).toEqual({ player0: 0, player1: 0 }) // ΔV0 = ΔV1 = +20
  })

  it('lets a counter-offer deny the open one, and [Deny] close it', () => {
    const outcomes = play(['[Offer: 3 Wood -> 2 Gold]', 'No. [Offer: 1 Gold -> 4 Wood]', '[Deny]', '[Offer: 1 Gold and 1 Gold -> 1 Wood]'])
    expect(outcomes[1]!.next!.observation).toContain(
      '[GAME] Player 1 implicitly denied the previous offer by making a counter-offer.\n' +
        '[GAME] Player 1 made the following offer to Player 0: Offered items: 1 Gold -> Requested items: 4 Wood',
    )
    expect(outcomes[2]!.next!.observation).toContain('[GAME] Player 0 denied the trade offer from Player 1.')
    expect(outcomes[2]!.next!.observation).toContain('No offer is open to you.')
    expect(outcomes[3]!.next!.observation).toContain('Open offer to you from Player 1: Offered items: 2 Gold -> Requested items: 1 Wood')
    expect(outcomes.every((outcome) => outcome.info.invalidAction !== true)).toBe(true)
  })

  it('passes on [Deny] with no offer open', () => {
    const outcomes = play(['[Deny]'])
    expect(outcomes[0]!.next!.observation).toContain('[Player 0] [Deny]\n[GAME] Player 0 passed (no offer to deny).')
  })

  it.each([
    ['no token at all', ['I would like some gold please'], 'player0', /is not \[Offer|no move found/],
    ['an unknown token', ['[Trade: 3 Wood -> 2 Gold]'], 'player0', /is not \[Offer: \.\.\. -> \.\.\.\], \[Accept\] or \[Deny\]/],
    ['a malformed offer (no arrow)', ['[Offer: 3 Wood for 2 Gold]'], 'player0', /malformed offer: an offer needs exactly one "->"/],
    ['a malformed offer (unknown resource)', ['[Offer: 3 Sheep -> 2 Gold]'], 'player0', /malformed offer: unknown resource "Sheep"/],
    ['a malformed offer (zero)', ['[Offer: 0 Wood -> 2 Gold]'], 'player0', /malformed offer: quantity 0/],
    ['offering what you do not hold', ['[Offer: 11 Wood -> 1 Gold]'], 'player0', /offered 11 Wood while holding only Wood 10, Gold 10/],
    [
      'offering what you no longer hold',
      ['[Offer: 10 Wood -> 1 Gold]', '[Accept]', '[Offer: 1 Wood -> 1 Gold]'],
      'player0',
      /offered 1 Wood while holding only Wood 0, Gold 11/,
    ],
    [
      'accepting with insufficient resources',
      ['[Offer: 1 Wood -> 11 Gold]', '[Accept]'],
      'player1',
      /accepted an offer without the resources it requests \(11 Gold\)/,
    ],
    ['accepting when no offer is open', ['[Accept]'], 'player0', /accepted an offer that was not made to them/],
    ['accepting after the offer was denied', ['[Offer: 1 Wood -> 1 Gold]', '[Deny]', '[Accept]'], 'player0', /not made to them/],
    [
      'accepting after a counter-offer replaced it',
      ['[Offer: 1 Wood -> 1 Gold]', '[Offer: 1 Gold -> 1 Wood]', '[Accept]', '[Accept]'],
      'player1',
      /not made to them/,
    ],
  ])('ends on %s: offender −1.5, opponent +0.5', (_kind, actions, offender, reason) => {
    const outcomes = play(actions)
    const last = outcomes.at(-1)!
    expect(outcomes.slice(0, -1).every((outcome) => !outcome.done)).toBe(true)
    expect(last).toMatchObject({ done: true, truncated: false, info: { invalidAction: true } })
    expect(last.rewards).toEqual(offender === 'player0' ? { player0: -1.5, player1: 0.5 } : { player0: 0.5, player1: -1.5 })
    expect(last.info.reason).toMatch(reason)
  })

  it('takes turns and maxTurns as options', () => {
    expect(play(passes(4), { turns: 4 })[3]).toMatchObject({ done: true, truncated: false })
    expect(play(passes(3), { maxTurns: 3 })[2]).toMatchObject({ done: true, truncated: true, rewards: { player0: 0, player1: 0 } })
    expect(createSimpleNegotiation({ turns: 4 }).reset(0).observation).toContain('The game lasts for 4 turns in total.')
  })

  it('reads observations back for scripted opponents', () => {
    const environment = createSimpleNegotiation()
    environment.reset(0)
    const valid = environment.step('[Offer: 2 Wood -> 3 Gold]').next!
    expect(parseNegotiationObservation(valid.observation)).toEqual({
      player: 1,
      turn: 2,
      turns: 10,
      values: { Wood: 15, Gold: 5 },
      inventory: { Wood: 10, Gold: 10 },
      offer: { from: 0, offered: { Wood: 2 }, requested: { Gold: 3 } },
    })
    expect(() => parseNegotiationObservation('nothing')).toThrow(/cannot read/)
  })
})

describe('Simple Negotiation state keys', () => {
  const keysAfter = (moves: readonly string[]) => {
    const environment = createSimpleNegotiation()
    const keys = [environment.reset(0).stateKey]
    for (const move of moves) keys.push(environment.step(move).next!.stateKey)
    return keys
  }

  it('key the turn, its own resources and the offer open to it, not how the game got there', () => {
    expect(keysAfter([])).toEqual(['player0|turn 1|Wood 10, Gold 10|offer none'])
    expect(keysAfter(['[Offer: 3 Wood -> 2 Gold]'])[1]).toBe('player1|turn 2|Wood 10, Gold 10|offer 3 Wood -> 2 Gold')
    const denied = keysAfter(['[Offer: 3 Wood -> 2 Gold]', '[Deny]'])[2]
    expect(denied).toBe('player0|turn 3|Wood 10, Gold 10|offer none')
    expect(keysAfter(['[Deny]', '[Deny]'])[2]).toBe(denied) // two passes reach the same situation
    expect(keysAfter(['[Offer: 3 Wood -> 2 Gold]', '[Accept]'])[2]).toBe('player0|turn 3|Wood 7, Gold 12|offer none')
  })
})
