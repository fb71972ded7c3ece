import { createGame, createRandomPolicy, gameIds, rewordObservations } from '@ludic/games'
import { evaluateAgainst } from '@ludic/trainer'
import { describe, expect, it } from 'vitest'
import { opponentRegistry } from './registries.js'

/** The games each opponent of the registry plays (a run config's `evaluation.opponents`). */
const plays: Record<string, readonly string[]> = {
  random: gameIds,
  minimax: ['tictactoe-v0'],
  nash: ['kuhn-poker-v1'],
  'negotiation-heuristic': ['simple-negotiation-v1'],
}

describe("the run config's opponents on reworded games", () => {
  it('play every game they play exactly as before when every observation is reworded', async () => {
    expect(opponentRegistry.names()).toEqual(Object.keys(plays))
    for (const name of opponentRegistry.names()) {
      for (const game of plays[name]!) {
        const match = (reword: boolean) =>
          evaluateAgainst({
            learner: createRandomPolicy({ seed: 4, id: 'learner' }),
            opponent: opponentRegistry.create(name, { seed: 9 }),
            environments: [() => (reword ? rewordObservations(createGame(game)) : createGame(game))],
            episodes: 6,
            seed: 2,
            generation: { maxTokens: 16 },
          })
        const [plain, reworded] = [await match(false), await match(true)]
        const { trajectories, ...figures } = plain
        expect({ ...reworded, trajectories: undefined }, `${name} in ${game}`).toEqual({ ...figures, trajectories: undefined })
        expect(reworded.trajectories.map((trajectory) => trajectory.turns.map((turn) => turn.action))).toEqual(
          trajectories.map((trajectory) => trajectory.turns.map((turn) => turn.action)),
        )
        expect(reworded.trajectories[0]!.turns[0]!.observation).toMatch(/^~~ REWORDED/)
      }
    }
  })
})
