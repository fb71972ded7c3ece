import { parseArgument, type AdvantageEstimatorV1 } from '@ludic/core'
import { z } from 'zod'
import { parseAdvantageBatch, requireField, toFloat32 } from './batch.js'

export const remaxOptionsSchema = z.strictObject({})
export type RemaxOptions = z.input<typeof remaxOptionsSchema>

/**
 * ReMax (Li et al. 2024, "ReMax: A Simple, Effective, and Efficient Reinforcement Learning Method for
 * Aligning Large Language Models"), exactly verl's `compute_remax_outcome_advantage`. Needs
 * `batch.baselineRewards`: per sample, the reward of the greedy response to the same prompt.
 *
 *   G_t = Σ_{s≥t} m_s·r_s  (undiscounted)        A_t = G_t − b_i·m_t
 *
 * Rewards on masked tokens do not count; a masked token keeps G_t (the later valid rewards) as both
 * its return and its advantage, verl's behaviour.
 */
export function createRemax(options: RemaxOptions = {}): AdvantageEstimatorV1 {
  parseArgument(remaxOptionsSchema, options, 'options')
  return {
    specificationVersion: 'v1',
    name: 'remax',
    requires: ['baselineRewards'],
    estimate(input) {
      const batch = parseAdvantageBatch(input)
      const baselines = requireField(batch, 'baselineRewards', 'remax', "the reward of each prompt's greedy response")
      const returns: Float64Array[] = []
      const advantages: Float64Array[] = []
      batch.tokenRewards.forEach((rewards, sample) => {
        const mask = batch.tokenMasks?.[sample]
        const sampleReturns = new Float64Array(rewards.length)
        const sampleAdvantages = new Float64Array(rewards.length)
        let running = 0
        for (let token = rewards.length - 1; token >= 0; token--) {
          const valid = mask === undefined || mask[token] === 1
          if (valid) running += rewards[token]!
          sampleReturns[token] = running
          sampleAdvantages[token] = valid ? running - baselines[sample]! : running
        }
        returns.push(sampleReturns)
        advantages.push(sampleAdvantages)
      })
      return { advantages: toFloat32(advantages), returns: toFloat32(returns) }
    },
  }
}
