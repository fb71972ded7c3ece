import { describe, expect, it } from 'vitest'
import { createIteratedPrisonersDilemma, parseIteratedPrisonersDilemmaObservation } from './iterated-prisoners-dilemma.js'

function play(choices: readonly [string, string][], options = {}) {
  const environment = createIteratedPrisonersDilemma(options)
  environment.reset(0)
  const outcomes = choices.flatMap(([first, second]) => [environment.step(first), environment.step(second)])
  return outcomes
}

describe("Iterated Prisoner's Dilemma", () => {
  it('pays 3/5/0/1 and reports each round to both', () => {
    const outcomes = play([
      ['[Cooperate]', '[Cooperate]'],
      ['[Defect]', '[Cooperate]'],
      ['[Cooperate]', '[Defect]'],
      ['[Defect]', '[Defect]'],
    ])
    const view = outcomes.at(-1)!.next!
    expect(view.role).toBe('player0')
    expect(view.observation).toContain('[GAME] Round 1 Results:\nBoth players cooperated\nPlayer 0 scored 3, total: 3\nPlayer 1 scored 3, total: 3')
    expect(view.observation).toContain(
      '[GAME] Round 2 Results:\nPlayer 0 defected, Player 1 cooperated\nPlayer 0 scored 5, total: 8\nPlayer 1 scored 0, total: 3',
    )
    expect(view.observation).toContain(
      '[GAME] Round 3 Results:\nPlayer 0 cooperated, Player 1 defected\nPlayer 0 scored 0, total: 8\nPlayer 1 scored 5, total: 8',
    )
    expect(view.observation).toContain('[GAME] Round 4 Results:\nBoth players defected\nPlayer 0 scored 1, total: 9\nPlayer 1 scored 1, total: 9')
    expect(view.observation.endsWith('[GAME] Round 5 of 10: make your decision.\nYour available actions are: [Cooperate], [Defect]')).toBe(true)
  })

  it("hides player0's choice from player1 until the round ends", () => {
    const environment = createIteratedPrisonersDilemma()
    environment.reset(0)
    const cooperate = environment.step('[Cooperate]').next!
    environment.reset(0)
    const defect = environment.step('[Defect]').next!
    expect(cooperate.role).toBe('player1')
    expect(cooperate.observation).toBe(defect.observation)
  })

  it('ends after 10 rounds: the higher total wins, equal totals draw', () => {
    const defector = play(new Array(10).fill(['[Defect]', '[Cooperate]']))
    expect(defector.at(-1)).toMatchObject({ done: true, truncated: false, rewards: { player0: 1, player1: -1 } })
    expect(defector.at(-1)!.info.reason).toBe('Player 0 won with 50 points vs 0 points')
    const cooperative = play(new Array(10).fill(['[Cooperate]', '[Cooperate]']))
    expect(cooperative.at(-1)).toMatchObject({ done: true, rewards: { player0: 0, player1: 0 } })
    expect(cooperative.slice(0, -1).every((outcome) => !outcome.done)).toBe(true)
  })

  it('takes rounds, payoffs and maxTurns as options, and rejects other moves', () => {
    const short = play([['[Cooperate]', '[Defect]']], { rounds: 1, payoffs: { sucker: 2, temptation: 1 } })
    expect(short.at(-1)).toMatchObject({ done: true, rewards: { player0: 1, player1: -1 } }) // 2 vs 1
    const truncated = play([['[Cooperate]', '[Cooperate]']], { maxTurns: 2 })
    expect(truncated.at(-1)).toMatchObject({ done: true, truncated: true, rewards: { player0: 0, player1: 0 } })
    const environment = createIteratedPrisonersDilemma()
    environment.reset(0)
    environment.step('[Cooperate]')
    expect(environment.step('[Betray]')).toMatchObject({ done: true, rewards: { player0: 0.5, player1: -1.5 }, info: { invalidAction: true } })
  })
})

describe("Iterated Prisoner's Dilemma state keys", () => {
  const keysAfter = (choices: readonly string[]) => {
    const environment = createIteratedPrisonersDilemma()
    const keys = [environment.reset(0).stateKey]
    for (const choice of choices) keys.push(environment.step(choice).next!.stateKey)
    return keys
  }

  it('key the round and the totals: the same totals by other choices are the same key; player0’s unseen choice is not in it', () => {
    expect(keysAfter([])).toEqual(['player0|round 1|score 0|opponent 0'])
    expect(keysAfter(['[Cooperate]'])[1]).toBe('player1|round 1|score 0|opponent 0')
    expect(keysAfter(['[Defect]'])[1]).toBe(keysAfter(['[Cooperate]'])[1]) // player1 has not seen it
    expect(keysAfter(['[Cooperate]', '[Defect]'])[2]).toBe('player0|round 2|score 0|opponent 5')
    expect(keysAfter(['[Defect]', '[Cooperate]'])[2]).toBe('player0|round 2|score 5|opponent 0')
    const swapped = [keysAfter(['[Cooperate]', '[Defect]', '[Defect]', '[Cooperate]']), keysAfter(['[Defect]', '[Cooperate]', '[Cooperate]', '[Defect]'])]
    expect(swapped[0]![4]).toBe('player0|round 3|score 5|opponent 5')
    expect(swapped[1]![4]).toBe(swapped[0]![4])
  })
})

describe('parseIteratedPrisonersDilemmaObservation', () => {
  it('reads the player, the round and every finished round back from the text, and refuses other text', () => {
    const environment = createIteratedPrisonersDilemma({ rounds: 4 })
    const played: string[] = []
    let view = environment.reset(0)
    const moves = ['[Cooperate]', '[Defect]', '[Defect]', '[Defect]', '[Cooperate]', '[Cooperate]', '[Defect]', '[Cooperate]']
    for (const [index, move] of moves.entries()) {
      const parsed = parseIteratedPrisonersDilemmaObservation(view.observation)
      expect(parsed).toEqual({ player: index % 2, round: Math.floor(index / 2) + 1, rounds: 4, results: played.slice(0, Math.floor(index / 2)) })
      if (index % 2 === 1) played.push(`${moves[index - 1]![1]}${move[1]}`)
      const outcome = environment.step(move)
      if (outcome.next === undefined) break
      view = outcome.next
    }
    expect(played).toEqual(['CD', 'DD', 'CC', 'DC'])
    expect(() => parseIteratedPrisonersDilemmaObservation('Current Board:')).toThrow(/cannot read the player and the round/)
  })
})
