import { LudicError, stepOutcomeSchema, type Random } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createTwoPlayerEnvironment, winLossRewards, type TwoPlayerRules } from './two-player-environment.js'

/** A toy game: players alternately say [up] or [down]; the third [up] in total wins for whoever said it. */
interface Toy {
  ups: number
  player: 0 | 1
  draws: number[]
}
const toy: TwoPlayerRules<Toy> = {
  id: 'toy-v0',
  start: (random: Random) => ({ ups: 0, player: 0, draws: [random.nextInt(100)] }),
  currentPlayer: (state) => state.player,
  observation: (state, player) => `Player ${player}, ups so far ${state.ups} (draw ${state.draws[0]}). Your available actions are: [up], [down]`,
  legalActions: () => ['[up]', '[down]'],
  explainIllegal: (_state, move) => `"${move}" is not up or down`,
  play(state, move) {
    if (move === '[up]' && ++state.ups === 3)
      return { kind: 'end', rewards: state.player === 0 ? [1, -1] : [-1, 1], reason: `Player ${state.player} said the third up` }
    state.player = state.player === 0 ? 1 : 0
    return { kind: 'continue' }
  },
}
const options = { invalidPenalty: -1.5, invalidOpponentReward: 0.5, maxTurns: 50 }

describe('createTwoPlayerEnvironment', () => {
  it('plays to the end with rewards on the last step only', () => {
    const environment = createTwoPlayerEnvironment(toy, options)
    expect(environment.roles).toEqual(['player0', 'player1'])
    const first = environment.reset(7)
    expect(first).toMatchObject({ role: 'player0', legalActions: ['[up]', '[down]'] })
    const steps = ['[up]', 'I go \\boxed{[DOWN]}', '[up]', '[up]'].map((action) => environment.step(action))
    for (const step of steps) expect(stepOutcomeSchema.parse(step)).toBeTruthy()
    expect(steps.slice(0, 3).map((step) => step.rewards)).toEqual(new Array(3).fill({ player0: 0, player1: 0 }))
    expect(steps[1]!.next!.role).toBe('player0')
    expect(steps[3]).toMatchObject({ done: true, truncated: false, rewards: { player0: -1, player1: 1 }, info: { reason: 'Player 1 said the third up' } })
    expect(steps[3]!.next).toBeUndefined()
  })

  it('ends on an invalid action with the penalty for the offender only', () => {
    const environment = createTwoPlayerEnvironment(toy, { ...options, invalidPenalty: -1, invalidOpponentReward: 1 })
    environment.reset(1)
    environment.step('[down]')
    const outcome = environment.step('[sideways]')
    expect(outcome).toMatchObject({ done: true, truncated: false, rewards: { player0: 1, player1: -1 }, info: { invalidAction: true } })
    expect(outcome.info.reason).toBe('Player 1 made an invalid action: "sideways" is not up or down')
    const other = createTwoPlayerEnvironment(toy, options)
    other.reset(1)
    expect(other.step('no move here').info.reason).toMatch(/no move found/)
  })

  it('truncates after maxTurns with 0/0', () => {
    const environment = createTwoPlayerEnvironment(toy, { ...options, maxTurns: 3 })
    environment.reset(0)
    expect(environment.step('[down]').done).toBe(false)
    expect(environment.step('[down]').done).toBe(false)
    expect(environment.step('[down]')).toMatchObject({ done: true, truncated: true, rewards: { player0: 0, player1: 0 } })
  })

  it('prefers the natural end over truncation on the same step', () => {
    const environment = createTwoPlayerEnvironment(toy, { ...options, maxTurns: 3 })
    environment.reset(0)
    environment.step('[up]')
    environment.step('[up]')
    expect(environment.step('[up]')).toMatchObject({ done: true, truncated: false, rewards: { player0: 1, player1: -1 } })
  })

  it('is a clear error to step before reset or after the end, and reset starts over', () => {
    const environment = createTwoPlayerEnvironment(toy, options)
    expect(() => environment.step('[up]')).toThrow(/before reset/)
    environment.reset(3)
    environment.step('???')
    expect(() => environment.step('[up]')).toThrow(LudicError)
    expect(() => environment.step('[up]')).toThrow(/after the episode ended/)
    expect(environment.reset(3).observation).toContain('ups so far 0')
    expect(() => environment.step(42 as unknown as string)).toThrow(/must be a string/)
  })

  it('draws randomness from the reset seed', () => {
    const environment = createTwoPlayerEnvironment(toy, options)
    const a = environment.reset(5).observation
    const b = environment.reset(6).observation
    expect(environment.reset(5).observation).toBe(a)
    expect(a).not.toBe(b)
    expect(() => environment.reset(0.5)).toThrow(/seed/)
  })

  it('winLossRewards', () => {
    expect(winLossRewards(3, 1)).toEqual([1, -1])
    expect(winLossRewards(1, 3)).toEqual([-1, 1])
    expect(winLossRewards(2, 2)).toEqual([0, 0])
  })
})
