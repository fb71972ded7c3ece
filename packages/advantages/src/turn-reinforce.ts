import { parseArgument, type AdvantageEstimatorV1 } from '@ludic/core'
import { z } from 'zod'
import { broadcastToTokens, parseAdvantageBatch, sampleScores } from './batch.js'
import { episodesOf, turnReturns } from './episodes.js'

export const turnReinforceOptionsSchema = z.strictObject({
  /** Discount factor γ between turns. Default: 0.95 (ROLL's `step_reward_gamma`). */
  gamma: z.number().min(0).max(1).default(0.95),
})
export type TurnReinforceOptions = z.input<typeof turnReinforceOptionsSchema>

/**
 * REINFORCE over the turns of multi-turn episodes (Williams 1992; ROLL's `step_reinforce`). Each sample
 * is one turn; its reward r_k is the sum of its token rewards (given at the turn's end). An episode is
 * one role's turns in one trajectory (`batch.trajectoryIds`, `batch.roles`), ordered by
 * `batch.turnIndices` (else batch order); without trajectory ids a sample is a one-turn episode.
 *
 *   A_k = G_k = r_k + γ·G_{k+1}        on every valid token of turn k; returns = advantages
 *
 * No baseline and no normalisation (ROLL's default `identity` reward normalisation).
 */
export function createTurnReinforce(options: TurnReinforceOptions = {}): AdvantageEstimatorV1 {
  const { gamma } = parseArgument(turnReinforceOptionsSchema, options, 'options')
  return {
    specificationVersion: 'v1',
    name: 'turn-reinforce',
    estimate(input) {
      const batch = parseAdvantageBatch(input)
      return broadcastToTokens(batch, turnReturns(episodesOf(batch), sampleScores(batch), gamma))
    },
  }
}
