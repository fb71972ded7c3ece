import { InvalidArgumentError, createRandom, deriveSeed, parseArgument, type EnvironmentV1, type StepOutcome, type TurnView } from '@ludic/core'
import { z } from 'zod'

export const randomOpeningsOptionsSchema = z
  .strictObject({
    /** Share of the episodes that start from a random opening; the rest start as the game does. Required. */
    share: z.number().min(0).max(1),
    /** Fewest opening moves, when an episode gets an opening. Default 1. */
    minMoves: z.number().int().min(1).max(1000).default(1),
    /** Most opening moves (1–1,000). Choose it below the shortest game, or openings that end the game are dropped (below). */
    maxMoves: z.number().int().min(1).max(1000),
  })
  .refine((options) => options.minMoves <= options.maxMoves, { message: 'must be at most maxMoves', path: ['minMoves'] })
export type RandomOpeningsOptions = z.input<typeof randomOpeningsOptionsSchema>

/**
 * Exploring starts (Sutton & Barto, *Reinforcement Learning*, §5.3; Kakade & Langford 2002's restart distribution):
 * the environment with `share` of its episodes started from a random opening — a number of moves drawn uniformly from
 * `minMoves`…`maxMoves`, each uniform over the legal actions, played for whichever role is to move — so that training
 * reaches positions the players' own play seldom makes (a must-block the random player makes but rarely punishes).
 * No policy acts in the opening: its moves are not turns of the trajectory (nor in a prompt's history), and the first
 * turn is whoever is to move after it (in TicTacToe after an odd opening, X). The opening is drawn from its own stream
 * of `reset`'s seed and the environment's id (the same seed, the same opening; the game's own draws are untouched). An
 * opening that would end the game, be invalid or pay a reward is dropped, and that episode starts as the game does —
 * nothing of it is lost, but an opening longer than the game's shortest play is then dropped often (or always).
 *
 * For training only: evaluations play the game from its start. With `share` 1 the learner never plays the starting
 * position itself. Needs an environment that lists `legalActions` (an opening move on one that does not is refused,
 * naming `environment`).
 */
export function withRandomOpenings(environment: EnvironmentV1, options: RandomOpeningsOptions): EnvironmentV1 {
  const { share, minMoves, maxMoves } = parseArgument(randomOpeningsOptionsSchema, options, 'options')
  const open = (seed: number): TurnView | undefined => {
    const random = createRandom(deriveSeed('ludic.random-opening', environment.id, seed))
    if (random.nextFloat() >= share) return undefined
    const moves = minMoves + random.nextInt(maxMoves - minMoves + 1)
    let view = environment.reset(seed)
    for (let move = 0; move < moves; move++) {
      const legal = view.legalActions
      if (legal === undefined || legal.length === 0)
        throw new InvalidArgumentError({
          argument: 'environment',
          value: environment.id,
          message: `lists no legal actions for role ${view.role}: a random opening needs them`,
        })
      const outcome: StepOutcome = environment.step(random.choice(legal))
      const paid = Object.values(outcome.rewards).some((reward) => reward !== 0)
      if (outcome.done || outcome.truncated || outcome.info.invalidAction === true || paid || outcome.next === undefined) return undefined
      view = outcome.next
    }
    return view
  }
  return {
    specificationVersion: 'v1',
    get id() {
      return environment.id
    },
    get roles() {
      return environment.roles
    },
    reset: (seed) => open(seed) ?? environment.reset(seed),
    step: (action) => environment.step(action),
  }
}
