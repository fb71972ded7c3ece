import { createRandomPolicy, gameIds } from '@ludic/games'
import { describe, expect, it, vi } from 'vitest'
import { builtInOpponentNames, evaluateGames } from './evaluate-games.js'

// The rewording test of `ludic eval` / `evaluateGames`: the games it creates by id (`createGame`) come out with every
// observation reworded while `reworded.on` is set (`rewordObservations` of @ludic/games: nothing else changes).
const reworded = vi.hoisted(() => ({ on: false, made: 0 }))
vi.mock('@ludic/games', async (importOriginal) => {
  const games = await importOriginal<typeof import('@ludic/games')>()
  return {
    ...games,
    createGame: ((id: string, options?: unknown) => {
      const environment = games.createGame(id as never, options as never)
      if (!reworded.on) return environment
      reworded.made++
      return games.rewordObservations(environment)
    }) as typeof games.createGame,
  }
})

describe('evaluateGames on reworded games', () => {
  it('gives the same rows against every built-in opponent in every game when every observation is reworded', async () => {
    const run = async (on: boolean) => {
      reworded.on = on
      try {
        return await evaluateGames({
          policy: createRandomPolicy({ seed: 11, id: 'evaluated' }),
          games: [...gameIds],
          opponents: [...builtInOpponentNames],
          episodes: 8,
          seed: 5,
        })
      } finally {
        reworded.on = false
      }
    }
    const plain = await run(false)
    expect(plain.rows.map((row) => `${row.game} ${row.opponent}`)).toHaveLength(gameIds.length + 3) // random everywhere, the others one game each
    expect(plain.rows.every((row) => row.invalidRate === 0)).toBe(true)
    expect(await run(true)).toEqual(plain)
    expect(reworded.made).toBeGreaterThan(0)
  })
})
