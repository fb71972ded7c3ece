import type { EnvironmentV1, PolicyV1 } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createKuhnBestResponsePolicy, createKuhnNashPolicy } from './kuhn-opponents.js'
import { kuhnConstantPolicy } from './kuhn-policy.js'
import { createNegotiationHeuristicPolicy } from './negotiation-heuristic.js'
import { playEpisode } from './play-episode.js'
import { createRandomPolicy } from './random-policy.js'
import { createGame, games } from './registry.js'
import { rewordObservations, scrambleWording } from './reworded-environment.js'
import { createTicTacToeMinimaxPolicy } from './tic-tac-toe-minimax.js'

/** Options that make a game list its moves where that is optional (Game of 24's steps). */
const listing: Record<string, Record<string, unknown>> = { 'game-of-24-v1': { listSteps: true } }

/** The scripted players of each game besides `random` (which plays every game). */
const scripted: Record<string, (seed: number) => PolicyV1> = {
  'tictactoe-v0': () => createTicTacToeMinimaxPolicy(),
  'kuhn-poker-v1': (seed) => (seed % 2 === 0 ? createKuhnNashPolicy({ alpha: 0.2, seed }) : createKuhnBestResponsePolicy({ policy: kuhnConstantPolicy(0.5) })),
  'simple-negotiation-v1': (seed) => createNegotiationHeuristicPolicy({ seed }),
}

/** Seats: every role random, or (where the game has one) the scripted player in seat `seed mod roles`. */
function players(environment: EnvironmentV1, seed: number): Record<string, PolicyV1> {
  const seats = Object.fromEntries(environment.roles.map((role, index) => [role, createRandomPolicy({ seed: seed * 10 + index })]))
  const make = scripted[environment.id]
  if (make !== undefined && seed % 3 !== 0) seats[environment.roles[seed % environment.roles.length]!] = make(seed)
  return seats
}

describe('rewordObservations', () => {
  it('rewrites every observation and nothing else', () => {
    const plain = createGame('kuhn-poker-v1')
    const reworded = rewordObservations(createGame('kuhn-poker-v1'))
    const [a, b] = [plain.reset(3), reworded.reset(3)]
    expect(b).toEqual({ ...a, observation: scrambleWording(a.observation) })
    expect(b.observation).not.toMatch(/available actions/i)
    const [next, nextReworded] = [plain.step('[bet]'), reworded.step('[bet]')]
    expect(nextReworded).toEqual({ ...next, next: { ...next.next!, observation: scrambleWording(next.next!.observation) } })
    expect([reworded.id, reworded.roles]).toEqual([plain.id, plain.roles])
  })

  // The rewording test: every game, its random and scripted players, the same episodes with the wording changed.
  it.each(games.names())('%s: the random and scripted players play a reworded game exactly as the original', async (id) => {
    for (let seed = 0; seed < 12; seed++) {
      const plain = await playEpisode(createGame(id, listing[id] ?? {}), players(createGame(id), seed), { seed, prompt: 'spiral' })
      const reworded = await playEpisode(rewordObservations(createGame(id, listing[id] ?? {})), players(createGame(id), seed), { seed, prompt: 'spiral' })
      expect(reworded).toEqual(plain)
      expect(plain.invalidAction).toBe(false)
    }
  })
})
