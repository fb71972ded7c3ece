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

  it("keeps one baseline per state with perState: each turn its return-to-go against its own state's baseline, as a plain loop computes", () => {
    // Random multi-turn batches: 12 trajectories of two roles, 2–8 turns each, rewards anywhere, states from a small set.
    const random = createRandom(5)
    const decay = 0.8
    const rae = createRae({ decay, perState: true, perOpponent: true })
    const parents = new Map<string, number>()
    const states = new Map<string, { visits: number; value: number }>()
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
      // The plain loop: per trajectory, per role (player0's episode, then player1's), its return updates the role's
      // baseline; then its turns in order, each turn's return-to-go against its state's baseline (a new state starts
      // from the role's baseline as read before the update), averaged over its first visits.
      const expected = new Array<number>(batch.roles.length)
      const rewardOf = (sample: number) => batch.tokenRewards[sample]!.reduce((sum, reward) => sum + reward, 0)
      for (const trajectory of new Set(batch.trajectoryIds)) {
        for (const role of ['player0', 'player1']) {
          const turns = batch.roles.flatMap((r, sample) => (r === role && batch.trajectoryIds[sample] === trajectory ? [sample] : []))
          const episodeReturn = turns.reduce((sum, sample) => sum + rewardOf(sample), 0)
          const parentKey = `${role}|${batch.opponentIds[turns[0]!]}`
          const parentBefore = parents.get(parentKey) ?? 0
          parents.set(parentKey, decay * parentBefore + (1 - decay) * episodeReturn)
          let returnToGo = episodeReturn
          for (const sample of turns) {
            const key = `${parentKey}|${batch.stateKeys[sample]}`
            const state = states.get(key) ?? { visits: 0, value: parentBefore }
            expected[sample] = returnToGo - state.value
            state.visits++
            state.value += Math.max(1 - decay, 1 / state.visits) * (returnToGo - state.value)
            states.set(key, state)
            returnToGo -= rewardOf(sample)
          }
        }
      }
      const advantages = rae.estimate(batch).advantages
      advantages.forEach((row, sample) => {
        for (const value of row) expect(value).toBeCloseTo(expected[sample]!, 5)
      })
    }
    const saved = rae.getState().baselines
    expect(saved.filter((baseline) => baseline.state === undefined)).toHaveLength(parents.size)
    expect(saved.filter((baseline) => baseline.state !== undefined)).toHaveLength(states.size)
    expect(rae.requires).toEqual(['roles', 'environmentIds', 'opponentIds', 'stateKeys'])
  })

  it("perState: a new state starts from its role's baseline; needs state keys and episodes; restores only where states are kept", () => {
    const keyed = (reward: number, trajectory: string): AdvantageBatch => ({
      ...game('tictactoe', reward),
      stateKeys: ['empty', 'x-centre'],
      trajectoryIds: [trajectory, trajectory],
      turnIndices: [0, 1],
    })
    const rae = createRae({ perState: true })
    expect(firstTokens(keyed(1, 'a'), rae)).toEqual([1, -1]) // the roles' baselines are 0: the states start there
    expect(rae.getState().baselines).toEqual([
      { environmentId: 'tictactoe', role: 'player0', value: expect.closeTo(0.05, 12) },
      { environmentId: 'tictactoe', role: 'player0', state: 'empty', visits: 1, value: 1 },
      { environmentId: 'tictactoe', role: 'player1', value: expect.closeTo(-0.05, 12) },
      { environmentId: 'tictactoe', role: 'player1', state: 'x-centre', visits: 1, value: -1 },
    ])
    // The second visit averages: b = 1 + ½(−1 − 1) = 0 after it; read before, A = −1 − 1.
    expect(firstTokens(keyed(-1, 'b'), rae)).toEqual([-2, 2])
    // A state met for the first time reads its role's baseline (0.05 · 0.95 − 0.05 = −0.0025 for player0 now).
    const moved = { ...keyed(1, 'c'), stateKeys: ['corner', 'x-centre'] }
    expect(firstTokens(moved, rae)[0]).toBeCloseTo(1 - (0.95 * 0.05 + 0.05 * -1), 6)
    expect(() => rae.estimate({ ...keyed(1, 'd'), stateKeys: undefined })).toThrow(/'batch\.stateKeys'.*'rae'.*perState/)
    expect(() => rae.estimate({ ...keyed(1, 'd'), trajectoryIds: undefined })).toThrow(/'batch\.trajectoryIds'.*'rae'.*perState/)
    expect(() => rae.estimate({ ...keyed(1, 'd'), turnIndices: undefined })).toThrow(/'batch\.turnIndices'.*'rae'.*perState/)
    const restored = createRae({ perState: true })
    restored.setState(JSON.parse(JSON.stringify(rae.getState())))
    expect(restored.estimate(keyed(1, 'e'))).toEqual(rae.estimate(keyed(1, 'e')))
    expect(() => createRae().setState(rae.getState())).toThrow(/'state\.baselines\.1'.*has a state/)
    const withoutVisits = { baselines: [{ environmentId: 'tictactoe', role: 'player0', state: 'empty', value: 1 }] }
    expect(() => createRae({ perState: true }).setState(withoutVisits)).toThrow(/'state\.baselines\.0'.*both a state and its visits/)
    // A per-role state restores into perState: its baselines are where new states start.
    const plain = createRae()
    plain.estimate(game('tictactoe', 1))
    const upgraded = createRae({ perState: true })
    upgraded.setState(plain.getState())
    const [first, second] = firstTokens(keyed(1, 'f'), upgraded)
    expect(first).toBeCloseTo(0.95, 6)
    expect(second).toBeCloseTo(-0.95, 6)
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
