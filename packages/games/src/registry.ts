import { InvalidArgumentError, type EnvironmentV1 } from '@ludic/core'
import { createIteratedPrisonersDilemma, type IteratedPrisonersDilemmaOptions } from './iterated-prisoners-dilemma.js'
import { createKuhnPoker, type KuhnPokerOptions } from './kuhn-poker.js'
import { createLiarsDice, type LiarsDiceOptions } from './liars-dice.js'
import { createPigDice, type PigDiceOptions } from './pig-dice.js'
import { createSimpleNegotiation, type SimpleNegotiationOptions } from './simple-negotiation.js'
import { createTicTacToe, type TicTacToeOptions } from './tic-tac-toe.js'

/** Each game's options, by environment id. */
export interface GameOptionsById {
  'tictactoe-v0': TicTacToeOptions
  'kuhn-poker-v1': KuhnPokerOptions
  'simple-negotiation-v1': SimpleNegotiationOptions
  'pig-dice-v0': PigDiceOptions
  'liars-dice-v0': LiarsDiceOptions
  'iterated-prisoners-dilemma-v0': IteratedPrisonersDilemmaOptions
}
export type GameId = keyof GameOptionsById

const factories: { readonly [Id in GameId]: (options?: GameOptionsById[Id]) => EnvironmentV1 } = {
  'tictactoe-v0': createTicTacToe,
  'kuhn-poker-v1': createKuhnPoker,
  'simple-negotiation-v1': createSimpleNegotiation,
  'pig-dice-v0': createPigDice,
  'liars-dice-v0': createLiarsDice,
  'iterated-prisoners-dilemma-v0': createIteratedPrisonersDilemma,
}

/** The ids of the games of this package. */
export const gameIds = Object.keys(factories) as GameId[]

/** Creates a game's environment by id (as a config or CLI names it), with that game's options. */
export function createGame<Id extends GameId>(id: Id, options?: GameOptionsById[Id]): EnvironmentV1 {
  const factory = (factories as Record<string, ((options?: unknown) => EnvironmentV1) | undefined>)[id]
  if (factory === undefined) throw new InvalidArgumentError({ argument: 'id', value: id, message: `is not a game of @ludic/games (${gameIds.join(', ')})` })
  return factory(options)
}
