import { parseArgument, type AdvantageEstimatorV1 } from '@ludic/core'
import { z } from 'zod'
import { broadcastToTokens, parseAdvantageBatch, sampleScores } from './batch.js'
import { groupStatistics } from './statistics.js'

export const grpoOptionsSchema = z.strictObject({
  /** Added to the group's standard deviation before dividing. Default: 1e-6 (verl). */
  epsilon: z.number().min(0).default(1e-6),
  /** Divide by the group's standard deviation; `false` is Dr. GRPO (see `createDrGrpo`). Default: true. */
  normalizeByStd: z.boolean().default(true),
})
export type GrpoOptions = z.input<typeof grpoOptionsSchema>

/**
 * Group Relative Policy Optimization (Shao et al. 2024, "DeepSeekMath"), exactly verl's
 * `compute_grpo_outcome_advantage`. With r_i the sum of sample i's token rewards and g its group:
 *
 *   A_i = (r_i − mean_g) / (std_g + ε)        on every valid token; returns = advantages
 *
 * std is unbiased (n − 1). A group of one has mean 0 and std 1, so its advantage is r_i / (1 + ε), not 0.
 */
export function createGrpo(options: GrpoOptions = {}): AdvantageEstimatorV1 {
  const { epsilon, normalizeByStd } = parseArgument(grpoOptionsSchema, options, 'options')
  return {
    specificationVersion: 'v1',
    name: 'grpo',
    estimate(input) {
      const batch = parseAdvantageBatch(input)
      const scores = sampleScores(batch)
      const { mean, std } = groupStatistics(scores, batch.groupIds)
      const advantages = scores.map((score, sample) => (normalizeByStd ? (score - mean[sample]!) / (std[sample]! + epsilon) : score - mean[sample]!))
      return broadcastToTokens(batch, advantages)
    },
  }
}
