import { parseArgument, type AdvantageEstimatorV1 } from '@ludic/core'
import { z } from 'zod'
import { createGrpo } from './grpo.js'

export const drGrpoOptionsSchema = z.strictObject({})
export type DrGrpoOptions = z.input<typeof drGrpoOptionsSchema>

/**
 * Dr. GRPO (Liu et al. 2025, "Understanding R1-Zero-Like Training: A Critical Perspective"): GRPO
 * without the division by the group's standard deviation, exactly verl's `grpo` with
 * `norm_adv_by_std_in_grpo=False`:
 *
 *   A_i = r_i − mean_g        (a group of one: A_i = r_i)
 *
 * The paper's other half, summing token losses over a constant length, is a loss aggregation
 * (`seq-mean-token-sum-norm` in `@ludic/objectives`).
 */
export function createDrGrpo(options: DrGrpoOptions = {}): AdvantageEstimatorV1 {
  parseArgument(drGrpoOptionsSchema, options, 'options')
  const grpo = createGrpo({ normalizeByStd: false })
  return { specificationVersion: 'v1', name: 'dr-grpo', estimate: (batch) => grpo.estimate(batch) }
}
