import { parseArgument, type AdvantageEstimatorV1 } from '@ludic/core'
import { z } from 'zod'
import { broadcastToTokens, parseAdvantageBatch, sampleScores } from './batch.js'
import { groupStatistics } from './statistics.js'

export const gpgOptionsSchema = z.strictObject({
  /** F_norm, the divisor of the centred reward (verl's `f_norm`, which its trainer leaves at 1). Default: 1. */
  normalizationFactor: z.number().positive().default(1),
})
export type GpgOptions = z.input<typeof gpgOptionsSchema>

/**
 * Group Policy Gradient (Chu et al. 2025, "GPG: A Simple and Strong Reinforcement Learning Baseline for
 * Model Reasoning"), exactly verl's `compute_gpg_outcome_advantage`. With B the batch size:
 *
 *   α = B / max(#{i : r_i ≠ 0}, 1)        A_i = α·(r_i − mean_g) / F_norm        (a group of one: mean 0)
 *
 * No division by the standard deviation.
 */
export function createGpg(options: GpgOptions = {}): AdvantageEstimatorV1 {
  const { normalizationFactor } = parseArgument(gpgOptionsSchema, options, 'options')
  return {
    specificationVersion: 'v1',
    name: 'gpg',
    estimate(input) {
      const batch = parseAdvantageBatch(input)
      const scores = sampleScores(batch)
      const nonZero = scores.reduce((count, score) => count + (score !== 0 ? 1 : 0), 0)
      const alpha = scores.length / Math.max(nonZero, 1)
      const { mean } = groupStatistics(scores, batch.groupIds)
      const advantages = scores.map((score, sample) => (alpha * (score - mean[sample]!)) / normalizationFactor)
      return broadcastToTokens(batch, advantages)
    },
  }
}
