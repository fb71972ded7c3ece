import { type AdvantageBatch, type AdvantageEstimatorV1, createRandom } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createRae } from './rae.js'

/** One game: player0 gets `reward`, player1 the opposite (zero-sum), one turn each. */
const game = (environmentId: string, reward: number): AdvantageBatch => ({
  tokenRewards: [Float32Array.of(0, reward), Float32Array.of(-reward)],
  groupIds: ['game', 'game'],
  roles: ['player0', 'player1'],
  environmentIds: [environmentId, environmentId],
})
const firstTokens = (batch: AdvantageBatch, estimator: ReturnType<typeof createRae>) => estimator.estimate(batch).advantages.map((row) => row[0]!)

describe('rae', () => {
  it('keeps one baseline per (environment, role) across batches, read before the update by default (SPIRAL)', () => {
    const rae = createRae()
    expect(firstTokens(game('kuhn-poker', 1), rae)).toEqual([1, -1]) // b = 0, then b ← 0.05 and −0.05
    expect(rae.getState().baselines).toEqual([
      { environmentId: 'kuhn-poker', role: 'player0', value: expect.closeTo(0.05, 12) },
      { environmentId: 'kuhn-poker', role: 'player1', value: expect.closeTo(-0.05, 12) },
    ])
    const [player0, player1] = firstTokens(game('kuhn-poker', 1), rae)
    expect(player0).toBeCloseTo(0.95, 6)
    expect(player1).toBeCloseTo(-0.95, 6)
    expect(firstTokens(game('tic-tac-toe', 1), rae)).toEqual([1, -1]) // another environment starts at 0
    expect(rae.getState().baselines).toHaveLength(4)
  })

  it('updates before reading with updateBeforeRead, which changes the advantages', () => {
    const rae = createRae({ updateBeforeRead: true, decay: 0.9 })
    const [first] = firstTokens(game('kuhn-poker', 1), rae)
    expect(first).toBeCloseTo(1 - 0.1, 6) // b ← 0.9·0 + 0.1·1, then A = 1 − b
    const [second] = firstTokens(game('kuhn-poker', 1), rae)
    expect(second).toBeCloseTo(1 - (0.9 * 0.1 + 0.1), 6)
  })

  it('treats the turns of one role in one trajectory as one episode: one return, one update', () => {
    const rae = createRae({ decay: 0.5 })
    const batch: AdvantageBatch = {
      tokenRewards: [Float32Array.of(0), Float32Array.of(0), Float32Array.of(2), Float32Array.of(-2)],
      groupIds: ['g', 'g', 'g', 'g'],
      roles: ['player0', 'player1', 'player0', 'player1'],
      environmentIds: ['kuhn-poker', 'kuhn-poker', 'kuhn-poker', 'kuhn-poker'],
      trajectoryIds: ['t', 't', 't', 't'],
      turnIndices: [0, 1, 2, 3],
    }
    expect(firstTokens(batch, rae)).toEqual([2, -2, 2, -2])
    expect(rae.getState().baselines.map((baseline) => baseline.value)).toEqual([1, -1])
  })

  it('saves and restores its baselines for checkpoints', () => {
    const rae = createRae()
    for (let step = 0; step < 5; step++) rae.estimate(game('kuhn-poker', step % 2 === 0 ? 1 : -0.5))
    const restored = createRae()
    restored.setState(JSON.parse(JSON.stringify(rae.getState())))
    expect(restored.estimate(game('kuhn-poker', 1))).toEqual(rae.estimate(game('kuhn-poker', 1)))
    expect(() => restored.setState({ baselines: [{ environmentId: 'e', role: 'r', value: Number.NaN }] })).toThrow(/'state\.baselines\.0\.value'/)
  })

  it("checkpoints through AdvantageEstimatorV1's optional getState / setState, as a trainer does", () => {
    const rae: AdvantageEstimatorV1 = createRae()
    rae.estimate(game('kuhn-poker', 1))
    const restored: AdvantageEstimatorV1 = createRae()
    restored.setState?.(JSON.parse(JSON.stringify(rae.getState?.())))
    expect(restored.getState?.()).toEqual(rae.getState?.())
    expect(() => restored.setState?.('not a state')).toThrow(/'state' \(value: "not a state"\)/)
  })

  it('keeps one baseline per (environment, role, opponent) with perOpponent: a draw against a strong opponent is not compared with wins against a weak one', () => {
    const mixed: AdvantageBatch = {
      // player0's episodes: a win against the random player, a draw against minimax, a win against random, a draw against minimax.
      tokenRewards: [Float32Array.of(1), Float32Array.of(0), Float32Array.of(1), Float32Array.of(0)],
      groupIds: ['a', 'b', 'c', 'd'],
      roles: ['player0', 'player0', 'player0', 'player0'],
      environmentIds: ['tictactoe', 'tictactoe', 'tictactoe', 'tictactoe'],
      trajectoryIds: ['a', 'b', 'c', 'd'],
      opponentIds: ['random', 'minimax', 'random', 'minimax'],
    }
    const decay = 0.5
    const plain = createRae({ decay })
    const perOpponent = createRae({ decay, perOpponent: true })
    // One baseline: 0 → 0.5 → 0.25 → 0.625, read before each update.
    expect(firstTokens(mixed, plain)).toEqual([1, -0.5, 0.75, -0.625])
    // Two: random's 0 → 0.5, minimax's stays 0: the draws get 0, the second win 0.5.
    expect(firstTokens(mixed, perOpponent)).toEqual([1, 0, 0.5, 0])
    expect(perOpponent.getState().baselines).toEqual([
      { environmentId: 'tictactoe', role: 'player0', opponent: 'random', value: 0.75 },
      { environmentId: 'tictactoe', role: 'player0', opponent: 'minimax', value: 0 },
    ])
    expect(perOpponent.requires).toEqual(['roles', 'environmentIds', 'opponentIds'])
    expect(() => perOpponent.estimate({ ...mixed, opponentIds: undefined })).toThrow(/'batch\.opponentIds'.*'rae'.*perOpponent/)
    const split = { ...mixed, trajectoryIds: ['a', 'a', 'c', 'd'] }
    expect(() => perOpponent.estimate(split)).toThrow(/'batch\.opponentIds\[1\]'.*differs from the opponent 'random' of sample 0 in the same trajectory/)
    // A checkpoint restores into an estimator keyed the same way only.
    const restored = createRae({ decay, perOpponent: true })
    restored.setState(JSON.parse(JSON.stringify(perOpponent.getState())))
    expect(restored.estimate(mixed)).toEqual(perOpponent.estimate(mixed))
    expect(() => createRae().setState(perOpponent.getState())).toThrow(/'state\.baselines\.0'.*has an opponent/)
    expect(() => createRae({ perOpponent: true }).setState(plain.getState())).toThrow(/'state\.baselines\.0'.*has no opponent/)
  })

  it('keeps one baseline per state with perState: each turn its return-to-go against its own state\'s baseline, as a plain loop computes', () => {
    // Random multi-turn batches: 12 trajectories of two roles, 1–4 turns each, rewards anywhere, states from a small set.
    const random = createRandom(5)
    const decay = 0.8
    const rae = createRae({ decay, perState: true, perOpponent: true })
    const plain = new Map<string, number>()
    for (let batchIndex = 0; batchIndex < 4; batchIndex++) {
      const batch = {
        tokenRewards: [] as Float32Array[],
        groupIds: [] as string[],
        roles: [] as string[],
        environmentIds: [] as string[],
        trajectoryIds: [] as string[],
        turnIndices: [] as number[],
        opponentIds: [] as string[],
        stateKeys: [] as string[],
      }
      for (let trajectory = 0; trajectory < 12; trajectory++) {
        const turns = 2 * (1 + Math.floor(random.nextFloat() * 4))
        const opponent = random.nextFloat() < 0.5 ? 'random' : 'minimax'
        for (let turn = 0; turn < turns; turn++) {
          const tokens = 1 + Math.floor(random.nextFloat() * 3)
          batch.tokenRewards.push(Float32Array.from({ length: tokens }, () => (random.nextFloat() < 0.3 ? Math.round(random.nextFloat() * 4) - 2 : 0)))
          batch.groupIds.push(`g${trajectory}`)
          batch.roles.push(`player${turn % 2}`)
          batch.environmentIds.push('tictactoe')
          batch.trajectoryIds.push(`b${batchIndex}t${trajectory}`)
          batch.turnIndices.push(turn)
          batch.opponentIds.push(opponent)
          batch.stateKeys.push(`s${Math.floor(random.nextFloat() * 3)}`)
        }
      }
      // The plain loop: per trajectory and role, turns in order; each turn's return-to-go against its key's baseline.
      const expected = new Array<number>(batch.roles.length)
      const rewardOf = (sample: number) => batch.tokenRewards[sample]!.reduce((sum, reward) => sum + reward, 0)
      for (let sample = 0; sample < batch.roles.length; sample++) {
        let returnToGo = 0
        for (let later = sample; later < batch.roles.length; later++)
          if (batch.trajectoryIds[later] === batch.trajectoryIds[sample] && batch.roles[later] === batch.roles[sample]) returnToGo += rewardOf(later)
        const key = [batch.roles[sample], batch.opponentIds[sample], batch.stateKeys[sample]].join('|')
        const before = plain.get(key) ?? 0
        plain.set(key, decay * before + (1 - decay) * returnToGo)
        expected[sample] = returnToGo - before
      }
      const advantages = rae.estimate(batch).advantages
      advantages.forEach((row, sample) => {
        for (const value of row) expect(value).toBeCloseTo(expected[sample]!, 5)
      })
    }
    expect(rae.getState().baselines.every((baseline) => baseline.state !== undefined && baseline.opponent !== undefined)).toBe(true)
    expect(rae.requires).toEqual(['roles', 'environmentIds', 'opponentIds', 'stateKeys'])
  })

  it('perState: needs state keys, and restores only a state keyed by state', () => {
    const keyed: AdvantageBatch = { ...game('tictactoe', 1), stateKeys: ['empty', 'x-centre'] }
    const rae = createRae({ perState: true })
    expect(firstTokens(keyed, rae)).toEqual([1, -1])
    expect(rae.getState().baselines).toEqual([
      { environmentId: 'tictactoe', role: 'player0', state: 'empty', value: expect.closeTo(0.05, 12) },
      { environmentId: 'tictactoe', role: 'player1', state: 'x-centre', value: expect.closeTo(-0.05, 12) },
    ])
    expect(() => rae.estimate(game('tictactoe', 1))).toThrow(/'batch\.stateKeys'.*'rae'.*perState/)
    const restored = createRae({ perState: true })
    restored.setState(JSON.parse(JSON.stringify(rae.getState())))
    expect(restored.estimate(keyed)).toEqual(rae.estimate(keyed))
    expect(() => createRae().setState(rae.getState())).toThrow(/'state\.baselines\.0'.*has a state/)
    expect(() => createRae({ perState: true }).setState(createRae().getState())).not.toThrow() // no baselines yet
    const plain = createRae()
    plain.estimate(game('tictactoe', 1))
    expect(() => createRae({ perState: true }).setState(plain.getState())).toThrow(/'state\.baselines\.0'.*has no state/)
  })

  it('needs roles and environments, and leaves its state untouched when a batch is rejected', () => {
    const rae = createRae()
    rae.estimate(game('kuhn-poker', 1))
    const before = rae.getState()
    expect(() => rae.estimate({ ...game('kuhn-poker', 1), roles: undefined })).toThrow(/'batch\.roles'.*'rae'/)
    const mixed = { ...game('kuhn-poker', 1), trajectoryIds: ['t', 't'], roles: ['player0', 'player0'], environmentIds: ['kuhn-poker', 'other'] }
    expect(() => rae.estimate(mixed)).toThrow(/'batch\.environmentIds\[1\]'.*differs from the environment 'kuhn-poker'/)
    expect(rae.getState()).toEqual(before)
  })
})
