import { InvalidArgumentError, type ChatMessage, type PolicyV1, type TurnView } from '@ludic/core'
import {
  createKuhnNashPolicy,
  createNegotiationHeuristicPolicy,
  createRandomPolicy,
  createTicTacToeMinimaxPolicy,
  gamePrompts,
  games,
  kuhnTerseObservation,
} from '@ludic/games'
import type { PromptTemplate } from '@ludic/rollout'
import type { EnvironmentRegistry, OpponentRegistry } from '@ludic/trainer'

/** The environments a run config names: `@ludic/games`' built-in games and those a plugin adds with `registerGame`. */
export const environmentRegistry: EnvironmentRegistry = games

/**
 * The prompts a run config's `prompt` may name: the games' (`spiral`, `terse`) and `kuhn-terse`, Kuhn Poker's
 * moves, legal moves and card on three lines (`kuhnTerseObservation`), which the Kuhn self-play example uses.
 */
export const namedPrompts: Readonly<Record<string, PromptTemplate>> = {
  ...gamePrompts,
  'kuhn-terse': (view: TurnView): ChatMessage[] => [{ role: 'user', content: kuhnTerseObservation(view.observation) }],
}

const opponentFactories: Readonly<Record<string, (seed: number) => PolicyV1>> = Object.assign(Object.create(null) as object, {
  /** Uniform among the legal moves of the request's turn (`GenerationRequest.turn`), whatever the prompt's wording. */
  random: (seed: number) => createRandomPolicy({ seed }),
  /** Perfect Tic-Tac-Toe. */
  minimax: () => createTicTacToeMinimaxPolicy(),
  /** Kuhn Poker's Nash equilibrium (α = 0). */
  nash: (seed: number) => createKuhnNashPolicy({ seed }),
  /** Simple Negotiation's scripted trader. */
  'negotiation-heuristic': (seed: number) => createNegotiationHeuristicPolicy({ seed }),
})

/** The opponents a run config's `evaluation.opponents` and `opponents[].name` name. */
export const opponentRegistry: OpponentRegistry = {
  create(name, { seed }) {
    const factory = opponentFactories[name]
    if (factory === undefined)
      throw new InvalidArgumentError({ argument: 'name', value: name, message: `is not an opponent (${Object.keys(opponentFactories).join(', ')})` })
    return factory(seed)
  },
  names: () => Object.keys(opponentFactories),
}
