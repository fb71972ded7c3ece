import { parseArgument, type AdvantageEstimatorV1 } from '@ludic/core'
import { z } from 'zod'
import { broadcastToTokens, parseAdvantageBatch, sampleScores } from './batch.js'
import { groupStatistics } from './statistics.js'

export const rlooOptionsSchema = z.strictObject({})
export type RlooOptions = z.input<typeof rlooOptionsSchema>

/**
 * REINFORCE Leave-One-Out (Kool et al. 2019, "Buy 4 REINFORCE Samples, Get a Baseline for Free!";
 * Ahmadian et al. 2024, "Back to Basics"), exactly verl's `compute_rloo_outcome_advantage`:
 *
 *   A_i = r_i − Σ_{j∈g, j≠i} r_j / (n_g − 1)    evaluated as r_i·n/(n−1) − mean_g·n/(n−1)
 *
 * A group of one has no baseline: A_i = r_i.
 */
export function createRloo(options: RlooOptions = {}): AdvantageEstimatorV1 {
  parseArgument(rlooOptionsSchema, options, 'options')
  return {
    specificationVersion: 'v1',
    name: 'rloo',
    estimate(input) {
      const batch = parseAdvantageBatch(input)
      const scores = sampleScores(batch)
      const { mean, size } = groupStatistics(scores, batch.groupIds)
      const advantages = scores.map((score, sample) => {
        const count = size[sample]!
        return count > 1 ? (score * count) / (count - 1) - (mean[sample]! * count) / (count - 1) : score
      })
      return broadcastToTokens(batch, advantages)
    },
  }
}
