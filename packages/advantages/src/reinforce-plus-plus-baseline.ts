import { parseArgument, type AdvantageEstimatorV1 } from '@ludic/core'
import { z } from 'zod'
import { parseAdvantageBatch, sampleScores, toFloat32 } from './batch.js'
import { groupStatistics, maskedWhiten, zeroMaskedTokens } from './statistics.js'

export const reinforcePlusPlusBaselineOptionsSchema = z.strictObject({
  /**
   * Accepted for parity with verl's signature (`epsilon=1e-6`), which does not use it either: the batch
   * whitening has its own fixed 1e-8. Default: 1e-6.
   */
  epsilon: z.number().positive().default(1e-6),
})
export type ReinforcePlusPlusBaselineOptions = z.input<typeof reinforcePlusPlusBaselineOptionsSchema>

/**
 * REINFORCE++ with a group baseline (Hu 2025, "REINFORCE++"), exactly verl's
 * `compute_reinforce_plus_plus_baseline_outcome_advantage`:
 *
 *   x_i = r_i − mean_g  on every valid token       advantages = whiten(x) over the batch's valid tokens
 *
 * A group of one has mean 0. Whitening weighs each sample by its number of valid tokens; masked tokens
 * get 0; `returns` equals `advantages`. Throws when the batch has fewer than 2 valid tokens.
 * (verl's `epsilon` argument is unused there; the option is accepted and has no effect, as in verl.)
 */
export function createReinforcePlusPlusBaseline(options: ReinforcePlusPlusBaselineOptions = {}): AdvantageEstimatorV1 {
  parseArgument(reinforcePlusPlusBaselineOptionsSchema, options, 'options')
  return {
    specificationVersion: 'v1',
    name: 'reinforce++-baseline',
    estimate(input) {
      const batch = parseAdvantageBatch(input)
      const scores = sampleScores(batch)
      const { mean } = groupStatistics(scores, batch.groupIds)
      const centered = batch.tokenRewards.map((rewards, sample) => new Float64Array(rewards.length).fill(scores[sample]! - mean[sample]!))
      const advantages = toFloat32(zeroMaskedTokens(maskedWhiten(centered, batch), batch))
      return { advantages, returns: advantages.map((row) => row.slice()) }
    },
  }
}
