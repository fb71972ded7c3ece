import { InvalidArgumentError, parseArgument, type AdvantageEstimatorV1 } from '@ludic/core'
import { z } from 'zod'
import { broadcastToTokens, groupMembers, parseAdvantageBatch, sampleScores } from './batch.js'

export const grpoPassKOptionsSchema = z.strictObject({
  /** Added to the group's standard deviation before dividing. Default: 1e-6 (verl). */
  epsilon: z.number().min(0).default(1e-6),
  /** Divide by the group's standard deviation (verl's `config.norm_adv_by_std_in_grpo`). Default: true. */
  normalizeByStd: z.boolean().default(true),
})
export type GrpoPassKOptions = z.input<typeof grpoPassKOptionsSchema>

/**
 * GRPO for pass@k (Tang et al. 2025, "Optimizing Language Models for Inference Time Objectives using
 * Reinforcement Learning", arXiv:2503.19595), exactly verl's `compute_grpo_passk_outcome_advantage`: only the
 * best sample of each group learns, from its margin over the runner-up:
 *
 *   A_best = (r_max − r_second) / (std_g + ε)        every other sample: A = 0
 *
 * std is unbiased (n − 1). Every group needs at least 2 samples; ties at the top give 0.
 */
export function createGrpoPassK(options: GrpoPassKOptions = {}): AdvantageEstimatorV1 {
  const { epsilon, normalizeByStd } = parseArgument(grpoPassKOptionsSchema, options, 'options')
  return {
    specificationVersion: 'v1',
    name: 'grpo-passk',
    estimate(input) {
      const batch = parseAdvantageBatch(input)
      const scores = sampleScores(batch)
      const advantages = new Float64Array(scores.length)
      for (const [groupId, members] of groupMembers(batch.groupIds)) {
        if (members.length < 2) {
          throw new InvalidArgumentError({
            argument: `batch.groupIds[${members[0]}]`,
            value: groupId,
            message: `pass@k needs at least 2 samples per group, group '${groupId}' has ${members.length}`,
          })
        }
        let best = members[0]!
        for (const sample of members) if (scores[sample]! > scores[best]!) best = sample
        let second = Number.NEGATIVE_INFINITY
        for (const sample of members) if (sample !== best && scores[sample]! > second) second = scores[sample]!
        let advantage = scores[best]! - second
        if (normalizeByStd) {
          let sum = 0
          for (const sample of members) sum += scores[sample]!
          const mean = sum / members.length
          let squares = 0
          for (const sample of members) squares += (scores[sample]! - mean) ** 2
          advantage = advantage / (Math.sqrt(squares / (members.length - 1)) + epsilon)
        }
        advantages[best] = advantage
      }
      return broadcastToTokens(batch, advantages)
    },
  }
}
