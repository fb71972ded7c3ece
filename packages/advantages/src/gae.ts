import { parseArgument, type AdvantageEstimatorV1 } from '@ludic/core'
import { z } from 'zod'
import { parseAdvantageBatch, requireField, toFloat32 } from './batch.js'
import { maskedWhiten } from './statistics.js'

export const gaeOptionsSchema = z.strictObject({
  /** Discount factor γ. Default: 1 (verl's `algorithm.gamma`). */
  gamma: z.number().min(0).max(1).default(1),
  /** GAE's λ: 0 is one-step TD (more bias), 1 is Monte Carlo (more variance). Default: 1 (verl's `algorithm.lam`). */
  lambda: z.number().min(0).max(1).default(1),
})
export type GaeOptions = z.input<typeof gaeOptionsSchema>

/**
 * Generalized Advantage Estimation (Schulman et al. 2016, "High-Dimensional Continuous Control Using
 * Generalized Advantage Estimation"), exactly verl's `compute_gae_advantage_return`. Needs `batch.values`.
 *
 *   δ_t = r_t + γ·V_{t+1} − V_t        A_t = δ_t + γλ·A_{t+1}        returns_t = A_t + V_t
 *   advantages = whiten(A) over every valid token of the batch
 *
 * Masked tokens (observation spans of a multi-turn sample) are skipped: they carry V_{t+1} and A_{t+1}
 * through unchanged, so the turns on either side see each other as adjacent. As in verl, `returns` and
 * the whitened advantages are not zeroed on masked tokens; losses must apply the mask.
 */
export function createGae(options: GaeOptions = {}): AdvantageEstimatorV1 {
  const { gamma, lambda } = parseArgument(gaeOptionsSchema, options, 'options')
  return {
    specificationVersion: 'v1',
    name: 'gae',
    requires: ['values'],
    estimate(input) {
      const batch = parseAdvantageBatch(input)
      const values = requireField(batch, 'values', 'gae', 'the critic values V_t')
      const raw = batch.tokenRewards.map((rewards, sample) => {
        const value = values[sample]!
        const mask = batch.tokenMasks?.[sample]
        const advantages = new Float64Array(rewards.length)
        let nextValue = 0
        let nextAdvantage = 0
        for (let token = rewards.length - 1; token >= 0; token--) {
          if (mask === undefined || mask[token] === 1) {
            const delta = rewards[token]! + gamma * nextValue - value[token]!
            nextAdvantage = delta + gamma * lambda * nextAdvantage
            nextValue = value[token]!
          }
          advantages[token] = nextAdvantage
        }
        return advantages
      })
      const returns = raw.map((advantages, sample) => {
        const row = new Float32Array(advantages.length)
        for (let token = 0; token < row.length; token++) row[token] = advantages[token]! + values[sample]![token]!
        return row
      })
      return { advantages: toFloat32(maskedWhiten(raw, batch)), returns }
    },
  }
}
