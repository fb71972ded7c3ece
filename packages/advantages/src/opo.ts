import { InvalidArgumentError, parseArgument, type AdvantageEstimatorV1 } from '@ludic/core'
import { z } from 'zod'
import { broadcastToTokens, groupMembers, parseAdvantageBatch, sampleScores, validTokenCounts } from './batch.js'

export const opoOptionsSchema = z.strictObject({})
export type OpoOptions = z.input<typeof opoOptionsSchema>

/**
 * On-Policy RL with Optimal reward baseline (Hao et al. 2025, "On-Policy RL with Optimal Reward
 * Baseline"), exactly verl's `compute_opo_outcome_advantage`. With L_j the number of valid tokens:
 *
 *   b_g = Σ_{j∈g} L_j·r_j / Σ_{j∈g} L_j        A_i = r_i − b_g        (a group of one: b = 0)
 *
 * Throws for a group of several samples that have no tokens at all (verl would divide 0 by 0).
 */
export function createOpo(options: OpoOptions = {}): AdvantageEstimatorV1 {
  parseArgument(opoOptionsSchema, options, 'options')
  return {
    specificationVersion: 'v1',
    name: 'opo',
    estimate(input) {
      const batch = parseAdvantageBatch(input)
      const scores = sampleScores(batch)
      const lengths = validTokenCounts(batch)
      const advantages = new Float64Array(scores.length)
      for (const [groupId, members] of groupMembers(batch.groupIds)) {
        let baseline = 0
        if (members.length > 1) {
          let weighted = 0
          let total = 0
          for (const sample of members) {
            weighted += lengths[sample]! * scores[sample]!
            total += lengths[sample]!
          }
          if (total === 0) {
            throw new InvalidArgumentError({
              argument: `batch.tokenRewards[${members[0]}]`,
              value: groupId,
              message: `the samples of group '${groupId}' have no tokens, so OPO's length-weighted baseline is undefined`,
            })
          }
          baseline = weighted / total
        }
        for (const sample of members) advantages[sample] = scores[sample]! - baseline
      }
      return broadcastToTokens(batch, advantages)
    },
  }
}
