import { describe, expect, it } from 'vitest'
import { kuhnInformationStateOf, kuhnInformationStates } from './kuhn-information-states.js'
import { createKuhnPoker } from './kuhn-poker.js'
import { kuhnInformationStateNames } from './kuhn-policy.js'

const rules = `Game Rules:
- Kuhn Poker uses a 3-card deck with J, Q, K (J lowest, K highest)
- Each player antes 1 chip and receives 1 card each round
- Game continues for 5 rounds
- The player with the most chips after all rounds wins

Action Rules:
- '[check]': Pass without betting (only if no bet is on the table)
- '[bet]': Add 1 chip to the pot (only if no bet is on the table)
- '[call]': Match an opponent's bet by adding 1 chip to the pot
- '[fold]': Surrender your hand and let your opponent win the pot`

describe('kuhnInformationStates', () => {
  const states = kuhnInformationStates()

  it("lists OpenSpiel's 12 states with the environment's text and actions", () => {
    expect(states.map((state) => state.name)).toEqual([...kuhnInformationStateNames])
    for (const state of states) {
      // The turn view a request carries there: what the tabular players read instead of the text.
      expect(state.turn).toMatchObject({
        environmentId: 'kuhn-poker-v1',
        role: state.role,
        legalActions: state.legalActions,
        state: { informationState: state.name },
      })
    }
    expect(states.find((state) => state.name === '2')!.observation).toBe(
      `[GAME] You are Player 1 in a 5 round game of Kuhn Poker.\n${rules}\n` +
        '[GAME] Starting round 1 out of 5 rounds.\nYour card is: K\nYour available actions are: [check], [bet]',
    )
    expect(states.find((state) => state.name === '0b')!.observation).toBe(
      `[GAME] You are Player 0 in a 5 round game of Kuhn Poker.\n${rules}\n` +
        '[GAME] Starting round 1 out of 5 rounds.\nYour card is: J\n[Player 1] [bet]\n[GAME] Your available actions are: [fold], [call]',
    )
    expect(
      states
        .find((state) => state.name === '1pb')!
        .observation.endsWith(
          'Your card is: Q\nYour available actions are: [check], [bet]\n[Player 1] [check]\n[Player 0] [bet]\n[GAME] Your available actions are: [fold], [call]',
        ),
    ).toBe(true)
    for (const state of states) {
      const facingBet = state.history.endsWith('b')
      expect(state.legalActions).toEqual(facingBet ? ['[fold]', '[call]'] : ['[check]', '[bet]'])
      expect(state.role).toBe(state.position === 0 ? 'player1' : 'player0')
      expect(state.card).toBe('JQK'[Number(state.name[0])])
      expect(new Set(states.map((other) => other.observation)).size).toBe(12)
    }
  })

  it('are exactly what the environment shows when play reaches them', () => {
    const reached = new Map<string, string>()
    for (let seed = 0; reached.size < 12 && seed < 200; seed++) {
      for (const history of ['', 'p', 'b', 'pb']) {
        const environment = createKuhnPoker()
        let view = environment.reset(seed)
        for (const action of history) view = environment.step(action === 'b' ? view.legalActions![1]! : view.legalActions![0]!).next!
        reached.set(kuhnInformationStateOf(view.observation), view.observation)
      }
    }
    expect(reached.size).toBe(12)
    for (const state of states) expect(reached.get(state.name)).toBe(state.observation)
  })

  it('follow the environment options', () => {
    const short = kuhnInformationStates({ rounds: 1, reward: 'chips' })
    expect(short[0]!.observation).toContain('You are Player 1 in a 1 round game of Kuhn Poker.')
    expect(short[0]!.observation).toContain('Starting round 1 out of 1 rounds.')
  })
})

describe('kuhnInformationStateOf', () => {
  it('inverts the 12 observations', () => {
    for (const state of kuhnInformationStates()) expect(kuhnInformationStateOf(state.observation)).toBe(state.name)
  })

  it('reads the current round in later rounds', () => {
    const environment = createKuhnPoker()
    let view = environment.reset(4)
    const seen: string[] = []
    for (let turn = 0; ; turn++) {
      const name = kuhnInformationStateOf(view.observation)
      const card = [...view.observation.matchAll(/Your card is: ([JQK])/g)].at(-1)![1]!
      expect(name[0]).toBe(String('JQK'.indexOf(card)))
      seen.push(name.slice(1))
      const outcome = environment.step(view.legalActions![turn % 3 === 1 ? 1 : 0]!)
      if (outcome.done) break
      view = outcome.next!
    }
    expect(seen).toContain('p')
    expect(seen.filter((history) => history === '')).toHaveLength(5)
  })

  it('rejects text that is not a Kuhn decision', () => {
    expect(() => kuhnInformationStateOf('Current Board: ...')).toThrow(/Starting round/)
  })
})
