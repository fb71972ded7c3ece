import { stepOutcomeSchema } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createLiarsDice, liarsDiceLegalActions, parseLiarsDiceObservation } from './liars-dice.js'

const diceOf = (observation: string) => [...observation.matchAll(/\[GAME\] Your dice: ([\d, ]+)\./g)].at(-1)![1]!.split(', ').map(Number)

describe("Liar's Dice", () => {
  it('shows each player its own dice, the bid and the actions', () => {
    const environment = createLiarsDice()
    const view = environment.reset(1)
    expect(view.role).toBe('player0')
    expect(view.observation.startsWith("[GAME] You are Player 0 in a 2-player Liar's Dice game.\nEach player starts with 5 dice")).toBe(true)
    expect(view.observation).toMatch(
      /\n\[GAME\] Round 1 starts with new dice: Player 0 has 5, Player 1 has 5\. Player 0 bids first\.\n\[GAME\] Your dice: [1-6](, [1-6]){4}\. Dice in play: 10 \(Player 0: 5, Player 1: 5\)\.\nCurrent bid: none\nYour available actions are: \[Bid: quantity, face\] with quantity 1-10 and face 1-6$/,
    )
    expect(view.legalActions).toHaveLength(60)
    expect(diceOf(view.observation)).toHaveLength(5)
    const next = environment.step('[Bid: 2, 3]').next!
    expect(next.observation).toContain('[Player 0] [Bid: 2, 3]\n[GAME] Player 0 bids 2 of face 3.')
    expect(next.observation).toContain('Current bid: Quantity = 2, Face Value = 3 (by Player 0)')
    expect([...next.observation.matchAll(/Your dice: /g)]).toHaveLength(1) // player1 sees its own dice only
    expect(next.observation).not.toContain('Dice were')
    expect(next.legalActions).toEqual(liarsDiceLegalActions({ quantity: 2, face: 3 }, 10))
    expect(next.legalActions).toContain('[Call]')
    expect(next.legalActions).not.toContain('[Bid: 2, 3]')
    expect(next.legalActions).not.toContain('[Bid: 3, 2]')
    expect(next.legalActions).toContain('[Bid: 2, 4]')
    expect(parseLiarsDiceObservation(next.observation)).toEqual({ bid: { quantity: 2, face: 3 }, diceInPlay: 10 })
  })

  it('resolves a call: the bidder loses a die if the bid was too high, else the caller; the loser starts next', () => {
    let bidderLost = 0
    let callerLost = 0
    for (let seed = 0; seed < 20; seed++) {
      const environment = createLiarsDice()
      environment.reset(seed)
      environment.step('[bid 3 5]') // a tolerant spelling of [Bid: 3, 5]
      const view = environment.step('\\boxed{[call]}').next!
      const dice = /Dice were: Player 0: ([\d, ]+); Player 1: ([\d, ]+)\./.exec(view.observation)!
      const count = `${dice[1]}, ${dice[2]}`.split(', ').filter((face) => face === '5').length
      const loser = count < 3 ? 0 : 1
      if (loser === 0) bidderLost++
      else callerLost++
      expect(view.observation).toContain(`The actual count of face 5 is ${count}`)
      expect(view.observation).toContain(loser === 0 ? 'Player 0 (the last bidder) loses one die.' : 'Player 1 (the caller) loses one die.')
      expect(view.role).toBe(`player${loser}`)
      expect(parseLiarsDiceObservation(view.observation)).toEqual({ bid: undefined, diceInPlay: 9 })
      expect(diceOf(view.observation)).toHaveLength(4) // the loser, down to 4 dice, bids first
    }
    expect(bidderLost).toBeGreaterThan(0)
    expect(callerLost).toBeGreaterThan(0)
  })

  it('ends when a player has no dice left: +1/−1', () => {
    const environment = createLiarsDice({ dice: 1 })
    environment.reset(2)
    environment.step('[Bid: 2, 6]') // two sixes among two dice: almost surely a bluff
    const outcome = stepOutcomeSchema.parse(environment.step('[Call]'))
    expect(outcome.done).toBe(true)
    expect(outcome.rewards.player0! + outcome.rewards.player1!).toBe(0)
    expect(Math.abs(outcome.rewards.player0!)).toBe(1)
    expect(outcome.info.reason).toMatch(/has no dice left/)
  })

  it('rolls the same dice for the same seed', () => {
    const dice = (seed: number) => diceOf(createLiarsDice().reset(seed).observation)
    expect(dice(5)).toEqual(dice(5))
    expect([1, 2, 3, 4, 5, 6].map(dice)).not.toEqual([1, 2, 3, 4, 5, 6].map(() => dice(5)))
  })

  it.each([
    [['[Call]'], /called with no bid to call/],
    [['[Bid: 2, 3]', '[Bid: 2, 3]'], /does not raise the current bid 2, 3/],
    [['[Bid: 2, 3]', '[Bid: 1, 4]'], /does not raise/],
    [['[Bid: 2, 3]', '[Bid: 3, 2]'], /does not raise/],
    [['[Bid: 2, 7]'], /face 7 is not 1-6/],
    [['[Bid: 11, 6]'], /quantity 11 exceeds the 10 dice in play/],
    [['[Bid: 0, 6]'], /at least 1/],
    [['[Raise]'], /neither \[Bid: quantity, face\] nor \[Call\]/],
  ])('rejects %j', (actions, reason) => {
    const environment = createLiarsDice()
    environment.reset(0)
    const outcomes = actions.map((action) => environment.step(action))
    expect(outcomes.at(-1)).toMatchObject({ done: true, info: { invalidAction: true } })
    expect(outcomes.at(-1)!.info.reason).toMatch(reason)
  })

  it('truncates after maxTurns', () => {
    const environment = createLiarsDice({ maxTurns: 2 })
    environment.reset(0)
    environment.step('[Bid: 1, 1]')
    expect(environment.step('[Bid: 1, 2]')).toMatchObject({ done: true, truncated: true, rewards: { player0: 0, player1: 0 } })
  })
})

describe("Liar's Dice state keys", () => {
  it("key its own dice (sorted), the opponent's dice count and the bid, never the opponent's dice", () => {
    const environment = createLiarsDice({ dice: 2 })
    const deals = Array.from({ length: 200 }, (_, seed) => {
      const first = environment.reset(seed)
      const second = environment.step('[Bid: 1, 3]').next!
      return { seed, first, second, dice: [diceOf(first.observation), diceOf(second.observation)] }
    })
    const deal = deals[0]!
    const own = [...deal.dice[0]!].sort().join(',')
    expect(deal.first.stateKey).toBe(`player0|dice ${own}|opponent dice 2|bid none`)
    expect(deal.second.stateKey).toBe(`player1|dice ${[...deal.dice[1]!].sort().join(',')}|opponent dice 2|bid 1x3`)
    // Another deal where player1 holds the same dice and player0 other dice: the same key for player1.
    const sorted = (dice: readonly number[]) => [...dice].sort().join(',')
    const twin = deals.find((other) => sorted(other.dice[1]!) === sorted(deal.dice[1]!) && sorted(other.dice[0]!) !== sorted(deal.dice[0]!))!
    expect(twin).toBeDefined()
    expect(twin.second.stateKey).toBe(deal.second.stateKey)
    expect(twin.first.stateKey).not.toBe(deal.first.stateKey)
  })
})
