import { InvalidArgumentError, type AdvantageBatch, type AdvantageEstimatorV1 } from '@ludic/core'
import type { CausalLanguageModel, ValueHead } from '@ludic/model'
import { responseLogprobs, scoreResponses, type TokenSequence } from '../sequences.js'
import { advantageBatchOf, rowsOf, withColumns, type Experience } from './experience.js'

/** The experience's samples as the model's input: prompt and response tokens. */
export function sequencesOf(experience: Experience): TokenSequence[] {
  return experience.samples.map((sample) => ({ promptIds: sample.promptTokenIds, responseIds: sample.responseTokenIds }))
}

/** What the log-prob stage needs. */
export interface LogprobStageSettings {
  model: CausalLanguageModel
  /** The KL term's frozen reference, when the run has one. */
  reference: CausalLanguageModel | undefined
  /** Recompute π_old with a full forward pass of the current weights (verl's `old_log_prob`). */
  recomputeOld: boolean
  /** Sequences per forward pass. */
  chunkSize: number
  /** The sampling temperature: every log-prob is log softmax(logits / T)[token], the distribution that sampled. */
  temperature: number
  /** Reference log-probs computed elsewhere (a rollout worker's), used instead of the reference model's. */
  referenceLogprobs?: Float32Array[] | undefined
  /** A shared critic's head: its values come from the same forward pass as π_old (`values` column). */
  valueHead?: ValueHead | undefined
}

/**
 * π_old and π_ref of every response token (`oldLogprobs`, `referenceLogprobs`). With `recomputeOld`, π_old is a full
 * forward pass of the current weights; on an on-policy batch that is the policy that sampled, so the rollout's own
 * log-probs (the decode path's) are compared with it token by token: `logprobDiff/mean`, `/max` and
 * `/fractionAbove1e-3` measure how far generation and training disagree (verl logs the same).
 */
export async function logprobStage(
  experience: Experience,
  settings: LogprobStageSettings,
): Promise<{ experience: Experience; metrics: Record<string, number> }> {
  const sequences = sequencesOf(experience)
  const external = experience.external.some((flag) => flag === 1)
  // External samples (demonstrations) have no rollout log-probs of this policy: their π_old is always recomputed.
  const recompute = settings.recomputeOld || external
  const at = { temperature: settings.temperature }
  const scored = recompute ? await scoreResponses(settings.model, sequences, settings.chunkSize, { ...at, valueHead: settings.valueHead }) : undefined
  const recomputed = scored?.logprobs
  const rollout = rowsOf(experience, 'rolloutLogprobs')
  const oldLogprobs =
    recomputed === undefined ? rollout : recomputed.map((row, index) => (settings.recomputeOld || experience.external[index] === 1 ? row : rollout[index]!))
  const referenceLogprobs =
    settings.reference === undefined
      ? undefined
      : (settings.referenceLogprobs ?? (await responseLogprobs(settings.reference, sequences, settings.chunkSize, at)))
  const metrics = recomputed !== undefined && !experience.origin.offPolicy ? logprobAgreement(rollout, recomputed, experience.external) : {}
  return {
    experience: withColumns(experience, {
      oldLogprobs,
      ...(referenceLogprobs === undefined ? {} : { referenceLogprobs }),
      ...(scored?.values === undefined ? {} : { values: scored.values }),
    }),
    metrics,
  }
}

/** |log π_rollout − log π_train| over the policy's own tokens: mean, max and the share above 1e-3. */
export function logprobAgreement(rollout: readonly Float32Array[], train: readonly Float32Array[], external: Uint8Array): Record<string, number> {
  let total = 0
  let maximum = 0
  let above = 0
  let count = 0
  rollout.forEach((row, sample) => {
    if (external[sample] === 1) return
    const other = train[sample]!
    for (let token = 0; token < row.length; token++) {
      const difference = Math.abs(row[token]! - other[token]!)
      total += difference
      maximum = Math.max(maximum, difference)
      if (difference > 1e-3) above++
      count++
    }
  })
  return count === 0 ? {} : { 'logprobDiff/mean': total / count, 'logprobDiff/max': maximum, 'logprobDiff/fractionAbove1e-3': above / count }
}

/**
 * Each sample's chain: the samples of its episode and role, in turn order. A critic's GAE runs along a role's whole
 * episode (its turns laid end to end, as verl runs GAE over a multi-turn sequence with the observations masked), so an
 * earlier turn bootstraps from the value of the role's next turn rather than from an episode end.
 */
export function roleChains(experience: Experience): number[][] {
  const chains = new Map<number, number[]>()
  const width = experience.names.roles.length
  for (let index = 0; index < experience.size; index++) {
    const key = experience.ids.episode[index]! * width + experience.ids.role[index]!
    const chain = chains.get(key)
    if (chain === undefined) chains.set(key, [index])
    else chain.push(index)
  }
  return [...chains.values()].map((chain) => chain.sort((a, b) => experience.ids.turn[a]! - experience.ids.turn[b]!))
}

/**
 * Advantages and returns from the estimator. An estimator that needs the critic's values (GAE) sees each role's episode
 * as one sequence of its turns' tokens (see `roleChains`); the others see one sample per turn, as they always have.
 */
export function advantageStage(experience: Experience, estimator: AdvantageEstimatorV1): Experience {
  const batch = advantageBatchOf(experience)
  if (!(estimator.requires ?? []).includes('values')) {
    const { advantages, returns } = estimator.estimate(batch)
    return withColumns(experience, { advantages, returns })
  }
  const chains = roleChains(experience)
  const joined = (rows: readonly Float32Array[], chain: readonly number[]) => {
    const out = new Float32Array(chain.reduce((total, index) => total + rows[index]!.length, 0))
    let at = 0
    for (const index of chain) {
      out.set(rows[index]!, at)
      at += rows[index]!.length
    }
    return out
  }
  const first = (values: readonly string[] | undefined) => values && chains.map((chain) => values[chain[0]!]!)
  const chained: AdvantageBatch = {
    tokenRewards: chains.map((chain) => joined(batch.tokenRewards, chain)),
    values: chains.map((chain) => joined(batch.values!, chain)),
    groupIds: first(batch.groupIds)!,
    ...(batch.roles === undefined ? {} : { roles: first(batch.roles)! }),
    ...(batch.environmentIds === undefined ? {} : { environmentIds: first(batch.environmentIds)! }),
    ...(batch.opponentIds === undefined ? {} : { opponentIds: first(batch.opponentIds)! }),
    ...(batch.trajectoryIds === undefined ? {} : { trajectoryIds: first(batch.trajectoryIds)! }),
  }
  const estimated = estimator.estimate(chained)
  const advantages = new Array<Float32Array>(experience.size)
  const returns = new Array<Float32Array>(experience.size)
  chains.forEach((chain, position) => {
    let at = 0
    for (const index of chain) {
      const length = batch.tokenRewards[index]!.length
      advantages[index] = estimated.advantages[position]!.subarray(at, at + length)
      returns[index] = estimated.returns[position]!.subarray(at, at + length)
      at += length
    }
  })
  return withColumns(experience, { advantages, returns })
}

/**
 * ReMax's baselines (Li et al. 2024): per sample, the return its role got in its group's greedy episode (`greedy`: the
 * returns by group id), as `baselineRewards`.
 */
export function baselineStage(experience: Experience, greedy: ReadonlyMap<string, Readonly<Record<string, number>>>): Experience {
  const baselineRewards = new Float32Array(experience.size)
  for (let index = 0; index < experience.size; index++) {
    const group = experience.names.groups[experience.ids.group[index]!]!
    const role = experience.names.roles[experience.ids.role[index]!]!
    const returns = greedy.get(group)
    if (returns === undefined) throw new InvalidArgumentError({ argument: 'greedy', value: group, message: 'has no greedy episode of this group' })
    baselineRewards[index] = returns[role] ?? 0
  }
  return withColumns(experience, {}, { baselineRewards })
}

/** Per token, min(exp(current − rollout log-prob), cap): the truncated importance ratio of stale rollout weights. */
export function importanceWeights(
  currentLogprobs: readonly Float32Array[],
  rolloutLogprobs: readonly Float32Array[],
  cap: number,
): { weights: Float32Array[]; mean: number; truncated: number } {
  if (currentLogprobs.length !== rolloutLogprobs.length)
    throw new InvalidArgumentError({
      argument: 'currentLogprobs',
      value: currentLogprobs.length,
      message: `has ${currentLogprobs.length} rows for ${rolloutLogprobs.length}`,
    })
  let total = 0
  let truncated = 0
  let count = 0
  const weights = rolloutLogprobs.map((rollout, row) => {
    const current = currentLogprobs[row]!
    return Float32Array.from(rollout, (rolloutLogprob, column) => {
      const ratio = Math.exp(current[column]! - rolloutLogprob)
      const weight = Number.isFinite(ratio) ? Math.min(ratio, cap) : cap
      if (ratio > cap || !Number.isFinite(ratio)) truncated++
      total += weight
      count++
      return weight
    })
  })
  return { weights, mean: count === 0 ? 1 : total / count, truncated: count === 0 ? 0 : truncated / count }
}
