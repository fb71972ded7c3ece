import { InvalidArgumentError, parseArgument, type AdvantageEstimatorV1 } from '@ludic/core'
import { z } from 'zod'
import { broadcastToTokens, parseAdvantageBatch, requireField, sampleScores } from './batch.js'
import { episodesOf } from './episodes.js'

export const raeOptionsSchema = z.strictObject({
  /** α, the weight the baseline keeps at each update. Default: 0.95 (SPIRAL's `role_baseline_ema_gamma`). */
  decay: z.number().gt(0).lt(1).default(0.95),
  /** Update the baseline with an episode's return before subtracting it. Default: false (SPIRAL's code reads first). */
  updateBeforeRead: z.boolean().default(false),
})
export type RaeOptions = z.input<typeof raeOptionsSchema>

/** The baselines of a RAE estimator, one per (environment, role): plain JSON for trainer checkpoints. */
export const raeStateSchema = z.strictObject({
  baselines: z.array(z.strictObject({ environmentId: z.string(), role: z.string(), value: z.number() })),
})
export type RaeState = z.infer<typeof raeStateSchema>

export interface RaeEstimator extends AdvantageEstimatorV1 {
  /** A copy of the baselines, for a checkpoint. */
  getState(): RaeState
  /** Restores baselines saved by `getState`. */
  setState(state: RaeState): void
}

/**
 * Role-conditioned Advantage Estimation (Liu et al. 2025, "SPIRAL: Self-Play on Zero-Sum Games
 * Incentivizes Reasoning via Multi-Agent Multi-Turn Reinforcement Learning"). One baseline per
 * (environment, role), starting at 0 and kept across batches. For each episode (one role's turns in
 * one trajectory, in batch order) with return R (the sum of its token rewards):
 *
 *   A = R − b        then   b ← α·b + (1 − α)·R        (`updateBeforeRead`: update first, then A = R − b)
 *
 * Every turn of the episode gets A on its valid tokens; returns = advantages. Needs `batch.roles` and
 * `batch.environmentIds`; a failed call leaves the baselines untouched.
 */
export function createRae(options: RaeOptions = {}): RaeEstimator {
  const { decay, updateBeforeRead } = parseArgument(raeOptionsSchema, options, 'options')
  let baselines = new Map<string, RaeState['baselines'][number]>() // key: JSON [environmentId, role]
  return {
    specificationVersion: 'v1',
    name: 'rae',
    requires: ['roles', 'environmentIds'],
    estimate(input) {
      const batch = parseAdvantageBatch(input)
      const roles = requireField(batch, 'roles', 'rae', 'it keeps one baseline per (environment, role)')
      const environmentIds = requireField(batch, 'environmentIds', 'rae', 'it keeps one baseline per (environment, role)')
      const scores = sampleScores(batch)
      const next = new Map([...baselines].map(([key, baseline]) => [key, { ...baseline }]))
      const advantages = new Float64Array(scores.length)
      for (const episode of episodesOf(batch)) {
        const environmentId = environmentIds[episode[0]!]!
        const role = roles[episode[0]!]!
        let episodeReturn = 0
        for (const sample of episode) {
          if (environmentIds[sample] !== environmentId) {
            const message = `differs from the environment '${environmentId}' of sample ${episode[0]} in the same trajectory`
            throw new InvalidArgumentError({ argument: `batch.environmentIds[${sample}]`, value: environmentIds[sample], message })
          }
          episodeReturn += scores[sample]!
        }
        const key = JSON.stringify([environmentId, role])
        const baseline = next.get(key) ?? { environmentId, role, value: 0 }
        const before = baseline.value
        baseline.value = decay * before + (1 - decay) * episodeReturn
        next.set(key, baseline)
        const advantage = episodeReturn - (updateBeforeRead ? baseline.value : before)
        for (const sample of episode) advantages[sample] = advantage
      }
      baselines = next
      return broadcastToTokens(batch, advantages)
    },
    getState: () => ({ baselines: [...baselines.values()].map((baseline) => ({ ...baseline })) }),
    setState(state) {
      const parsed = parseArgument(raeStateSchema, state, 'state')
      baselines = new Map(parsed.baselines.map((baseline) => [JSON.stringify([baseline.environmentId, baseline.role]), { ...baseline }]))
    },
  }
}
