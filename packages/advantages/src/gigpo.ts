import { InvalidArgumentError, parseArgument, type AdvantageBatch, type AdvantageEstimatorV1 } from '@ludic/core'
import { z } from 'zod'
import { broadcastToTokens, parseAdvantageBatch, requireField, sampleScores } from './batch.js'
import { episodeReturns, episodesOf, turnReturns } from './episodes.js'
import { groupStatistics } from './statistics.js'

/** Reads the anchor-state key of a sample: equal keys within a group are the same state. */
export type StateKeyFunction = (batch: AdvantageBatch, sample: number) => string

export const gigpoOptionsSchema = z.strictObject({
  /** ω, the weight of the step-level advantage. Default: 1 (verl-agent's `step_advantage_w`). */
  stepWeight: z.number().min(0).default(1),
  /** Discount factor γ of the step returns. Default: 0.95 (verl-agent's and ROLL's GiGPO settings). */
  gamma: z.number().min(0).max(1).default(0.95),
  /** Divide by the group's standard deviation (`mean_std_norm`); else centre only (`mean_norm`). Default: false. */
  normalizeByStd: z.boolean().default(false),
  /** Added to the standard deviation before dividing. Default: 1e-6. */
  epsilon: z.number().min(0).default(1e-6),
  /** The anchor-state key of a sample. Default: `batch.stateKeys[sample]`. */
  stateKey: z.custom<StateKeyFunction>((value) => typeof value === 'function', 'must be a function (batch, sample) => string').optional(),
})
export type GigpoOptions = z.input<typeof gigpoOptionsSchema>

/**
 * Group-in-Group Policy Optimization (Feng et al. 2025, "Group-in-Group Policy Optimization for LLM Agent
 * Training"), as verl-agent's `compute_gigpo_outcome_advantage`. Each sample is one turn (step) of an
 * episode (one role's turns in one trajectory, ordered by `batch.turnIndices`); r_k is its reward.
 *
 *   episode level:  A^E = norm(R) among the samples of its group g,   R = Σ_k r_k the episode's return
 *   step level:     A^S = norm(G_k) among the steps of group g whose anchor state equals this one's,
 *                   G_k = r_k + γ·G_{k+1}
 *   A = A^E + ω·A^S on every valid token; returns = advantages
 *
 * norm(x) = x − mean (or (x − mean)/(std + ε)), std unbiased. As in verl-agent, episode statistics count
 * every step of an episode, a group of one has mean 0 and std 1, and a step alone in its state gets A^S = 0.
 */
export function createGigpo(options: GigpoOptions = {}): AdvantageEstimatorV1 {
  const { stepWeight, gamma, normalizeByStd, epsilon, stateKey } = parseArgument(gigpoOptionsSchema, options, 'options')
  const normalize = (value: number, mean: number, std: number) => (normalizeByStd ? (value - mean) / (std + epsilon) : value - mean)
  return {
    specificationVersion: 'v1',
    name: 'gigpo',
    // With its own stateKey function it reads no field beyond rewards and groups.
    requires: stateKey === undefined ? ['stateKeys'] : [],
    estimate(input) {
      const batch = parseAdvantageBatch(input)
      const readKey = stateKey ?? stateKeysOf(batch)
      const stepGroups = batch.groupIds.map((groupId, sample) => {
        const key = readKey(batch, sample)
        if (typeof key !== 'string') {
          throw new InvalidArgumentError({ argument: 'options.stateKey', value: key, message: `must return a string (sample ${sample})` })
        }
        return JSON.stringify([groupId, key])
      })
      const turnRewards = sampleScores(batch)
      const episodes = episodesOf(batch)
      const totals = episodeReturns(episodes, turnRewards)
      const stepReturns = turnReturns(episodes, turnRewards, gamma)
      const episodeLevel = groupStatistics(totals, batch.groupIds)
      const stepLevel = groupStatistics(stepReturns, stepGroups)
      const advantages = totals.map((total, sample) => {
        const episodeAdvantage = normalize(total, episodeLevel.mean[sample]!, episodeLevel.std[sample]!)
        const stepAdvantage = stepLevel.size[sample] === 1 ? 0 : normalize(stepReturns[sample]!, stepLevel.mean[sample]!, stepLevel.std[sample]!)
        return episodeAdvantage + stepWeight * stepAdvantage
      })
      return broadcastToTokens(batch, advantages)
    },
  }
}

function stateKeysOf(batch: AdvantageBatch): StateKeyFunction {
  const stateKeys = requireField(batch, 'stateKeys', 'gigpo', 'equal keys within a group mark the same state')
  return (_, sample) => stateKeys[sample]!
}
