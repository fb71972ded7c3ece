import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createGame, gameIds } from './registry.js'

describe('createGame', () => {
  it('creates every game by its id, with its options', () => {
    expect(gameIds).toEqual(['tictactoe-v0', 'kuhn-poker-v1', 'simple-negotiation-v1', 'pig-dice-v0', 'liars-dice-v0', 'iterated-prisoners-dilemma-v0'])
    for (const id of gameIds) {
      const environment = createGame(id)
      expect(environment.id).toBe(id)
      expect(environment.specificationVersion).toBe('v1')
      expect(environment.roles).toEqual(['player0', 'player1'])
      expect(environment.reset(0).role).toMatch(/^player[01]$/)
    }
    expect(createGame('kuhn-poker-v1', { rounds: 2 }).reset(0).observation).toContain('in a 2 round game')
  })

  it('names the games when the id is unknown', () => {
    expect(() => createGame('chess-v0' as 'tictactoe-v0')).toThrow(InvalidArgumentError)
    expect(() => createGame('chess-v0' as 'tictactoe-v0')).toThrow(/tictactoe-v0, kuhn-poker-v1/)
  })
})
