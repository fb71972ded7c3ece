import { parseArgument } from '@ludic/core'
import { fitBradleyTerry, type ArenaComparison } from '@ludic/roleplay'
import { z } from 'zod'

/** One league game: the learner against an opponent (a snapshot's or a scripted player's policy id). */
export interface LeagueGame {
  opponent: string
  /** The learner's score: 1 won, ½ tie, 0 lost. */
  score: number
}

const gameSchema = z.strictObject({ opponent: z.string().min(1), score: z.union([z.literal(0), z.literal(0.5), z.literal(1)]) })

/**
 * Bradley–Terry ratings (Elo scale, mean 1000) of the league's players from its last `window` games: the learner
 * (`learner`) and every opponent it met in them. The fit is CharacterArena's (`fitBradleyTerry` of `@ludic/roleplay`,
 * one virtual tie per pair); the learner is one player across the window although its weights change, so a
 * snapshot's rating says how it fared against the recent learner, and later snapshots rate above earlier ones when
 * training makes progress.
 */
export class PoolRatings {
  private games: LeagueGame[] = []

  constructor(
    readonly window: number,
    readonly learnerId: string,
  ) {}

  /** Records a game; the oldest is forgotten past `window`. */
  record(game: LeagueGame): void {
    this.games.push(game)
    if (this.games.length > this.window) this.games.splice(0, this.games.length - this.window)
  }

  get size(): number {
    return this.games.length
  }

  /** The ratings by player id (none before the first game). */
  ratings(): Record<string, number> {
    if (this.games.length === 0) return {}
    const comparisons: ArenaComparison[] = this.games.map(({ opponent, score }) => ({
      a: this.learnerId,
      b: opponent,
      outcome: score === 1 ? 'a' : score === 0 ? 'b' : 'tie',
    }))
    return fitBradleyTerry(comparisons).ratings
  }

  getState(): LeagueGame[] {
    return this.games.map((game) => ({ ...game }))
  }

  setState(games: unknown): void {
    this.games = parseArgument(z.array(gameSchema), games, 'state.games').slice(-this.window)
  }
}
