import { parseArgument, type AdvantageEstimatorV1 } from '@ludic/core'
import { z } from 'zod'
import { parseAdvantageBatch, toFloat32 } from './batch.js'
import { maskedWhiten, zeroMaskedTokens } from './statistics.js'

export const reinforcePlusPlusOptionsSchema = z.strictObject({
  /** Discount factor γ of the per-token returns. Default: 1 (verl's `algorithm.gamma`). */
  gamma: z.number().min(0).max(1).default(1),
})
export type ReinforcePlusPlusOptions = z.input<typeof reinforcePlusPlusOptionsSchema>

/**
 * REINFORCE++ (Hu 2025, "REINFORCE++: A Simple and Efficient Approach for Aligning Large Language
 * Models"), exactly verl's `compute_reinforce_plus_plus_outcome_advantage`. No groups, no critic:
 *
 *   G_t = r_t + γ·G_{t+1}   (valid tokens only)      advantages = whiten(G) over the batch's valid tokens
 *
 * Masked tokens carry the running return through unchanged and get 0 in both outputs; `returns` is G.
 * Throws when the batch has fewer than 2 valid tokens (verl's whitening does too).
 */
export function createReinforcePlusPlus(options: ReinforcePlusPlusOptions = {}): AdvantageEstimatorV1 {
  const { gamma } = parseArgument(reinforcePlusPlusOptionsSchema, options, 'options')
  return {
    specificationVersion: 'v1',
    name: 'reinforce++',
    estimate(input) {
      const batch = parseAdvantageBatch(input)
      const returns = batch.tokenRewards.map((rewards, sample) => {
        const mask = batch.tokenMasks?.[sample]
        const row = new Float64Array(rewards.length)
        let running = 0
        for (let token = rewards.length - 1; token >= 0; token--) {
          if (mask === undefined || mask[token] === 1) {
            running = rewards[token]! + gamma * running
            row[token] = running
          }
        }
        return row
      })
      const advantages = zeroMaskedTokens(maskedWhiten(returns, batch), batch)
      return { advantages: toFloat32(advantages), returns: toFloat32(returns) }
    },
  }
}
