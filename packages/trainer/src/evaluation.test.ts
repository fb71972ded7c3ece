import { InvalidArgumentError, type EnvironmentV1 } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import { describe, expect, it } from 'vitest'
import { evaluateAgainst, wilsonInterval } from './evaluation.js'
import { createPickEnvironment } from './test/support.js'

const twoRoles = () => createPickEnvironment(['player0', 'player1'])
/** The pick game under another id, so two environments can be played at once. */
const renamed = (id: string) => (): EnvironmentV1 => ({ ...createPickEnvironment(['player0', 'player1']), id })

describe('evaluateAgainst', () => {
  it('alternates seats, gives each policy its prompt, and measures from the learner’s seat', async () => {
    // The learner picks `a` (+1); the opponent `b` (−1): the learner wins every game, in both seats.
    const learner = createScriptedPolicy({ id: 'learner', replies: () => 'a' })
    const opponent = createScriptedPolicy({ id: 'opponent', replies: () => 'b' })
    const result = await evaluateAgainst({ learner, opponent, environments: [twoRoles], episodes: 4, seed: 2, prompt: 'learner sees: {observation}' })
    expect(result.learnerSeats).toEqual(['player0', 'player1', 'player0', 'player1'])
    expect(result.trajectories.map((trajectory) => trajectory.seed)).toEqual([200_000, 200_001, 200_002, 200_003])
    expect([learner.requests.length, opponent.requests.length]).toEqual([4, 4]) // one move each per game
    expect(learner.requests.every((request) => request.messages![0]!.content.startsWith('learner sees: game '))).toBe(true)
    expect(opponent.requests.every((request) => request.messages![0]!.content.startsWith('game '))).toBe(true)
    expect(result).toMatchObject({
      episodes: 4,
      winRate: 1,
      drawRate: 0,
      lossRate: 0,
      meanReward: 1,
      invalidRate: 0,
      winRateBySeat: { player0: 1, player1: 1 },
    })
    expect(result.samples).toHaveLength(4) // the learner's moves only
    expect(result.winRateInterval[0]).toBeCloseTo(0.5101, 4)
    expect(result.winRateInterval[1]).toBe(1)
  })

  it('counts draws, losses and invalid moves (an invalid move ends the game with −1.5)', async () => {
    // Two games against an opponent that always picks `a`, the learner always answering `reply`.
    const against = (reply: string) =>
      evaluateAgainst({
        learner: createScriptedPolicy({ id: 'learner', replies: () => reply }),
        opponent: createScriptedPolicy({ id: 'opponent', replies: () => 'a' }),
        environments: [twoRoles],
        episodes: 2,
        seed: 0,
      })
    expect(await against('a')).toMatchObject({ winRate: 0, drawRate: 1, lossRate: 0, meanReward: 1 })
    const invalid = await against('c')
    // As player0 the learner moves first (invalid: −1.5, the opponent 0); as player1 after the opponent's +1.
    expect(invalid).toMatchObject({ winRate: 0, drawRate: 0, lossRate: 1, meanReward: -1.5, invalidRate: 1 })
  })

  it('gives figures per environment when several are played', async () => {
    let turn = 0
    const learner = createScriptedPolicy({ id: 'learner', replies: () => (turn++ % 2 === 0 ? 'a' : 'b') })
    const opponent = createScriptedPolicy({ id: 'opponent', replies: () => 'a' })
    const result = await evaluateAgainst({ learner, opponent, environments: [renamed('one-v1'), renamed('two-v1')], episodes: 3, seed: 1, concurrency: 1 })
    expect(Object.keys(result.byEnvironment)).toEqual(['one-v1', 'two-v1'])
    for (const figures of Object.values(result.byEnvironment)) expect(figures.episodes).toBe(3)
    const { byEnvironment } = result
    expect(result.winRate).toBe(0)
    expect(result.drawRate).toBeCloseTo((byEnvironment['one-v1']!.drawRate + byEnvironment['two-v1']!.drawRate) / 2, 12)
    expect(result.meanReward).toBeCloseTo((byEnvironment['one-v1']!.meanReward + byEnvironment['two-v1']!.meanReward) / 2, 12)
  })

  it('rejects bad options, naming them', async () => {
    const policy = createScriptedPolicy({ id: 'learner', replies: () => 'a' })
    await expect(evaluateAgainst({ learner: policy, opponent: policy, environments: [twoRoles], episodes: 0, seed: 0 })).rejects.toThrow(/options\.episodes/)
    await expect(evaluateAgainst({ learner: {} as never, opponent: policy, environments: [twoRoles], episodes: 1, seed: 0 })).rejects.toThrow(
      InvalidArgumentError,
    )
  })
})

describe('wilsonInterval', () => {
  it('matches the Wilson score interval (95%)', () => {
    const [low, high] = wilsonInterval(5, 10)
    expect(low).toBeCloseTo(0.2366, 4)
    expect(high).toBeCloseTo(0.7634, 4)
    expect(wilsonInterval(0, 10)[0]).toBe(0)
    expect(wilsonInterval(0, 10)[1]).toBeCloseTo(0.2775, 4)
    expect(wilsonInterval(0, 0)).toEqual([0, 1])
  })
})
