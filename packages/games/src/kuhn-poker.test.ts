import { stepOutcomeSchema, type StepOutcome } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { kuhnInformationStateOf } from './kuhn-information-states.js'
import {
  createKuhnPoker,
  createKuhnPokerRules,
  kuhnFirstActor,
  kuhnLegalActions,
  kuhnPokerOptionsSchema,
  type KuhnDeal,
  type KuhnPokerOptions,
} from './kuhn-poker.js'
import { createTwoPlayerEnvironment } from './two-player-environment.js'

const cardOf = (observation: string) => {
  const cards = [...observation.matchAll(/Your card is: ([JQK])/g)]
  return 'JQK'.indexOf(cards.at(-1)![1]!)
}

/** Plays one round of `history` (p/b) and returns the first actor's and the second actor's cards and the outcome. */
function playRound(options: KuhnPokerOptions, seed: number, history: string) {
  const environment = createKuhnPoker({ rounds: 1, reward: 'chips', ...options })
  let view = environment.reset(seed)
  const cards: number[] = [cardOf(view.observation)]
  let outcome: StepOutcome | undefined
  for (const [index, action] of [...history].entries()) {
    const move = kuhnLegalActions(history.slice(0, index))[action === 'b' ? 1 : 0]!
    outcome = environment.step(move)
    if (outcome.next !== undefined) {
      view = outcome.next
      if (cards.length === 1) cards.push(cardOf(view.observation))
    }
  }
  return { first: cards[0]!, second: cards[1]!, outcome: outcome! }
}

describe('Kuhn Poker', () => {
  it("starts round 1 with player1, showing its card and actions in TextArena's lines", () => {
    const environment = createKuhnPoker()
    const view = environment.reset(3)
    expect(view.role).toBe('player1')
    expect(view.legalActions).toEqual(['[check]', '[bet]'])
    expect(view.observation.startsWith('[GAME] You are Player 1 in a 5 round game of Kuhn Poker.\nGame Rules:\n')).toBe(true)
    expect(view.observation).toMatch(/\n\[GAME\] Starting round 1 out of 5 rounds\.\nYour card is: [JQK]\nYour available actions are: \[check\], \[bet\]$/)
    const next = environment.step('\\boxed{[bet]}').next!
    expect(next.role).toBe('player0')
    expect(next.legalActions).toEqual(['[fold]', '[call]'])
    expect(next.observation).toMatch(
      /^\[GAME\] You are Player 0 in a 5 round game of Kuhn Poker\.[\s\S]*\n\[GAME\] Starting round 1 out of 5 rounds\.\nYour card is: [JQK]\n\[Player 1\] \[bet\]\n\[GAME\] Your available actions are: \[fold\], \[call\]$/,
    )
    expect(next.observation).not.toMatch(/Your available actions are: \[check\], \[bet\]/) // player1's line is private
  })

  it('deals the same cards for the same seed, whatever is played, and alternates the first actor', () => {
    /** Each round's cards, as each player sees its own, plus who acts first in each round. */
    const play = (seed: number, aggressive: boolean) => {
      const environment = createKuhnPoker()
      let view = environment.reset(seed)
      const cards = new Map<string, number>()
      const firstActors: string[] = []
      for (let turn = 0; ; turn++) {
        const round = [...view.observation.matchAll(/Starting round (\d+)/g)].at(-1)![1]
        cards.set(`${round} ${view.role}`, cardOf(view.observation))
        if (turn % 2 === 0) firstActors.push(view.role) // both lines of play take two actions per round
        const outcome = environment.step(view.legalActions![aggressive ? 1 : 0]!)
        if (outcome.done) return { cards: [...cards].sort(), firstActors }
        view = outcome.next!
      }
    }
    const checking = play(11, false)
    expect(checking.cards).toHaveLength(10) // 5 rounds × 2 players
    expect(play(11, true).cards).toEqual(checking.cards) // bet and call: same deals
    expect(play(11, false)).toEqual(checking)
    expect(checking.firstActors).toEqual(['player1', 'player0', 'player1', 'player0', 'player1'])
    expect([0, 1, 2, 3, 4].map(kuhnFirstActor)).toEqual([1, 0, 1, 0, 1])
    expect(play(12, false).cards).not.toEqual(checking.cards)
  })

  it.each([
    ['pp', 'showdown after two checks: ±1'],
    ['bp', 'the second actor folds: first actor +1'],
    ['bb', 'bet and call: ±2'],
    ['pbp', 'the first actor folds: second actor +1'],
    ['pbb', 'check, bet, call: ±2'],
  ])('pays OpenSpiel payoffs for %s (%s)', (history) => {
    for (const seed of [0, 1, 2, 3, 4, 5, 6, 7]) {
      const { first, second, outcome } = playRound({}, seed, history)
      const stake = history === 'pp' ? 1 : 2
      const expected = history === 'bp' ? 1 : history === 'pbp' ? -1 : first > second ? stake : -stake
      expect(outcome).toMatchObject({ done: true, truncated: false })
      expect(outcome.rewards).toEqual({ player1: expected, player0: -expected }) // player1 acts first in round 1
    }
  })

  it("reproduces SPIRAL's code with variant 'spiral': bets add nothing to the pot", () => {
    for (const history of ['bb', 'pbb']) {
      for (const seed of [0, 1, 2, 3]) {
        const { first, second, outcome } = playRound({ variant: 'spiral' }, seed, history)
        expect(outcome.rewards.player1).toBe(first > second ? 1 : -1)
      }
    }
    expect(playRound({ variant: 'spiral' }, 0, 'bb').outcome.info.reason).toBeDefined()
  })

  it("decides a 'spiral' episode by the last round, and a standard one by the chips", () => {
    // Both players always check: every round is a showdown worth ±1 chip.
    const play = (options: KuhnPokerOptions, seed: number) => {
      const environment = createKuhnPoker(options)
      let view = environment.reset(seed)
      for (;;) {
        const outcome = environment.step('[check]')
        if (outcome.done) return { outcome, observation: view.observation }
        view = outcome.next!
      }
    }
    let found = 0
    for (let seed = 0; seed < 40; seed++) {
      const chips = play({ reward: 'chips' }, seed).outcome.rewards.player0!
      const standard = play({}, seed).outcome.rewards.player0!
      const spiral = play({ variant: 'spiral' }, seed)
      expect(standard).toBe(Math.sign(chips))
      expect(Math.abs(chips) % 2).toBe(1) // five ±1 rounds: never a tie
      // The last round's winner, from the chips before it and the final chips.
      const before = Number(/Chips after round 4: Player 0: (-?\d+)/.exec(spiral.observation)![1])
      const lastRoundWinner = chips > before ? 1 : -1
      expect(spiral.outcome.rewards.player0).toBe(lastRoundWinner)
      if (lastRoundWinner !== standard) found++
    }
    expect(found).toBeGreaterThan(0) // seeds where the two rules disagree exist, and both were checked
  })

  it('adds the net chips of 5 rounds, zero-sum, with winLoss the sign', () => {
    for (let seed = 0; seed < 20; seed++) {
      const results = (['chips', 'winLoss'] as const).map((reward) => {
        const environment = createKuhnPoker({ reward })
        let view = environment.reset(seed)
        for (let turn = 0; ; turn++) {
          const outcome = stepOutcomeSchema.parse(environment.step(view.legalActions![(seed + turn) % 3 === 0 ? 1 : 0]!))
          if (outcome.done) return outcome
          view = outcome.next!
        }
      })
      const [chips, winLoss] = results as [(typeof results)[0], (typeof results)[0]]
      expect(chips.rewards.player0! + chips.rewards.player1!).toBe(0)
      expect(winLoss.rewards.player0).toBe(Math.sign(chips.rewards.player0!))
      expect(winLoss.rewards.player0! + winLoss.rewards.player1!).toBe(0)
    }
  })

  it('reports the round results, chips and the next round in the history', () => {
    const environment = createKuhnPoker({ rounds: 2 })
    environment.reset(5)
    environment.step('[bet]')
    const next = environment.step('[fold]').next!
    expect(next.role).toBe('player0') // round 2 starts with player0
    expect(next.observation).toContain(
      '[Player 1] [bet]\n[GAME] Your available actions are: [fold], [call]\n[Player 0] [fold]\n' +
        '[GAME] Player 0 has folded. Player 1 wins pot of 3 chips.\n[GAME] Chips after round 1: Player 0: -1; Player 1: 1\n' +
        '[GAME] Starting round 2 out of 2 rounds.\nYour card is: ',
    )
    environment.step('[check]')
    const last = environment.step('[check]')
    expect(last.done).toBe(true)
  })

  it.each([
    ['[call]', /"\[call\]" is not one of \[check\], \[bet\]/],
    ['[raise]', /is not one of/],
    ['', /no move found/],
    ['I check', /no move found/],
  ])('ends on the invalid action %j: offender −1.5, opponent +0.5', (action, reason) => {
    const environment = createKuhnPoker()
    environment.reset(0)
    const outcome = environment.step(action)
    expect(outcome).toMatchObject({ done: true, truncated: false, rewards: { player1: -1.5, player0: 0.5 }, info: { invalidAction: true } })
    expect(outcome.info.reason).toMatch(reason)
  })

  it('rejects [check] facing a bet, and truncates after maxTurns with 0/0', () => {
    const environment = createKuhnPoker()
    environment.reset(0)
    environment.step('[bet]')
    expect(environment.step('[check]')).toMatchObject({ done: true, rewards: { player0: -1.5, player1: 0.5 } })

    const short = createKuhnPoker({ maxTurns: 4 })
    short.reset(0)
    const outcomes = ['[check]', '[check]', '[check]', '[check]'].map((action) => short.step(action))
    expect(outcomes.slice(0, 3).every((outcome) => !outcome.done)).toBe(true)
    expect(outcomes[3]).toMatchObject({ done: true, truncated: true, rewards: { player0: 0, player1: 0 } })
  })

  it('validates its options', () => {
    expect(() => createKuhnPoker({ rounds: 0 })).toThrow(/options\.rounds/)
    expect(() => createKuhnPoker({ variant: 'leduc' as 'spiral' })).toThrow(/options\.variant/)
    expect(() => createKuhnPoker({ invalidPenalty: Number.NaN })).toThrow(/options\.invalidPenalty/)
    expect(createKuhnPoker({ rounds: 1 }).reset(0).observation).toContain('You are Player 1 in a 1 round game of Kuhn Poker.')
    expect(createKuhnPoker({ reward: 'chips' }).reset(0).observation).toContain('- Your reward is your net number of chips after all rounds')
  })
})

describe('Kuhn Poker state keys', () => {
  /** The views of a game with these deals (`[card of player0, card of player1]` per round, 0 = J) and actions (p/b per move). */
  function views(deals: readonly KuhnDeal[], actions: string, options: KuhnPokerOptions = {}) {
    const parsed = kuhnPokerOptionsSchema.parse({ rounds: deals.length, ...options })
    const environment = createTwoPlayerEnvironment(createKuhnPokerRules(parsed, deals), parsed)
    const seen = [environment.reset(0)]
    for (const action of actions) {
      const outcome = environment.step(seen.at(-1)!.legalActions![action === 'b' ? 1 : 0]!) // passive first, then bet or call
      if (outcome.next !== undefined) seen.push(outcome.next)
    }
    return seen
  }

  it("key the acting player's information set: its card and the round's history, never the opponent's card", () => {
    // player1 acts first in round 1 and holds K in both deals; player0 holds J in one and Q in the other.
    const [first, second, third] = [views([[0, 2]], 'pb'), views([[1, 2]], 'pb'), views([[2, 1]], 'pb')]
    expect(first.map((view) => view.stateKey)).toEqual([
      'player1|round 1|chips 0|card K|history -',
      'player0|round 1|chips 0|card J|history p',
      'player1|round 1|chips 0|card K|history pb',
    ])
    expect(second[0]!.stateKey).toBe(first[0]!.stateKey) // another opponent card, the same key
    expect(second[2]!.stateKey).toBe(first[2]!.stateKey)
    expect(second[1]!.stateKey).toBe('player0|round 1|chips 0|card Q|history p') // its own card changes it
    expect(third[0]!.stateKey).toBe('player1|round 1|chips 0|card Q|history -')
    expect(views([[0, 2]], 'b')[1]!.stateKey).toBe('player0|round 1|chips 0|card J|history b')
  })

  it('equal the information state read from the observation, over random 5-round games', () => {
    for (let seed = 0; seed < 40; seed++) {
      const environment = createKuhnPoker()
      let view = environment.reset(seed)
      for (let turn = 0; ; turn++) {
        const name = kuhnInformationStateOf(view.observation)
        const key = /^player([01])\|round (\d)\|chips [+-]?\d+\|card ([JQK])\|history (-|[pb]+)$/.exec(view.stateKey!)
        expect(key, view.stateKey).not.toBeNull()
        expect(`player${key![1]}`).toBe(view.role)
        expect(`${'JQK'.indexOf(key![3]!)}${key![4] === '-' ? '' : key![4]}`).toBe(name)
        expect(view.state).toEqual({ informationState: name }) // the structured state the tabular players read
        const outcome = environment.step(view.legalActions![(seed + turn) % 2]!)
        if (outcome.next === undefined) break
        view = outcome.next
      }
    }
  })

  it('carry the chip standing into later rounds, not the path to it', () => {
    // Round 1 (player1 first): with K against J player1 wins a showdown; with J against K player0 does, unless player0 folds to a bet.
    const won = views(
      [
        [0, 2],
        [1, 0],
      ],
      'pp',
    )[2]! // player1 +1 → round 2, player0 (−1) to act with Q
    const lost = views(
      [
        [2, 0],
        [1, 0],
      ],
      'pp',
    )[2]! // player0 +1
    const folded = views(
      [
        [2, 0],
        [1, 0],
      ],
      'bp',
    )[2]! // player0 folds its K to a bet: −1
    expect(won.stateKey).toBe('player0|round 2|chips -1|card Q|history -')
    expect(lost.stateKey).toBe('player0|round 2|chips +1|card Q|history -')
    expect(folded.stateKey).toBe(won.stateKey)
    // Under SPIRAL's rule the last round alone decides: chips do not count and are left out.
    expect(
      views(
        [
          [0, 2],
          [1, 0],
        ],
        'pp',
        { variant: 'spiral' },
      )[2]!.stateKey,
    ).toBe('player0|round 2|card Q|history -')
    expect(
      views(
        [
          [0, 2],
          [1, 0],
        ],
        'pp',
        { variant: 'spiral', reward: 'chips' },
      )[2]!.stateKey,
    ).toBe('player0|round 2|chips -1|card Q|history -')
  })
})
