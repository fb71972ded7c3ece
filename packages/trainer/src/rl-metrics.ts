import type { Sample, Trajectory } from '@ludic/core'
import type { StepMetrics } from './metrics-log.js'

/** Rewards and win rates per environment and role, truncation and invalid-action rates, response length. */
export function rolloutMetrics(trajectories: readonly Trajectory[], samples: readonly Sample[]): Record<string, number> {
  const metrics: Record<string, number> = {}
  const byEnvironment = new Map<string, Trajectory[]>()
  for (const trajectory of trajectories) byEnvironment.set(trajectory.environmentId, [...(byEnvironment.get(trajectory.environmentId) ?? []), trajectory])
  for (const [environmentId, group] of byEnvironment) {
    for (const role of group[0]!.roles) {
      metrics[`reward/${environmentId}/${role}`] = mean(group.map((trajectory) => trajectory.returns[role] ?? 0))
      metrics[`winRate/${environmentId}/${role}`] = mean(group.map((trajectory) => (wins(trajectory, role) ? 1 : 0)))
    }
  }
  metrics.episodes = trajectories.length
  metrics.truncatedRate = mean(trajectories.map((trajectory) => (trajectory.truncated ? 1 : 0)))
  metrics.samples = samples.length
  metrics.invalidRate = mean(samples.map((sample) => (sample.invalid ? 1 : 0)))
  metrics.responseLength = mean(samples.map((sample) => sample.responseTokenIds.length))
  return metrics
}

/**
 * Off-policy figures of asynchronous collection: how stale the batch was and how much the importance weights cut.
 * `staleness` is the batch's (`stepIndex` − its oldest token's version, `policyVersion`); `tokenStalenessMean` and
 * `tokenStalenessMax` are over the samples' response tokens, each `stepIndex` − the version that sampled it
 * (`Sample.tokenPolicyVersions`: a partial rollout's tokens differ), else its sample's `policyVersion`, else the batch's.
 */
export function offPolicyMetrics(
  stepIndex: number,
  policyVersion: number,
  dropped: number,
  importance: { mean: number; truncated: number },
  samples: readonly Sample[],
): Record<string, number> {
  let tokens = 0
  let total = 0
  let most = 0
  for (const sample of samples) {
    const length = sample.responseTokenIds.length
    for (let index = 0; index < length; index++) {
      const staleness = stepIndex - (sample.tokenPolicyVersions?.[index] ?? sample.policyVersion ?? policyVersion)
      total += staleness
      most = tokens === 0 ? staleness : Math.max(most, staleness)
      tokens++
    }
  }
  const batchStaleness = stepIndex - policyVersion
  return {
    staleness: batchStaleness,
    tokenStalenessMean: tokens === 0 ? batchStaleness : total / tokens,
    tokenStalenessMax: tokens === 0 ? batchStaleness : most,
    importanceWeightMean: importance.mean,
    importanceTruncatedFraction: importance.truncated,
    batchesDropped: dropped,
  }
}

/** The fields a progress bar shows: rewards, evaluations, invalid rate, entropy, clip fraction, speed. */
export function progressFields(metrics: StepMetrics): Record<string, number> {
  const fields: Record<string, number> = {}
  for (const [name, value] of Object.entries(metrics)) {
    if (name.startsWith('reward/') || name.startsWith('eval/') || ['invalidRate', 'entropy', 'clipFraction', 'tokensPerSecond'].includes(name)) {
      fields[name.replace(/^reward\/[^/]+\//, 'reward.').replace(/^eval\//, 'eval.')] = value
    }
  }
  return fields
}

/** A role wins when its return beats every other role's. */
const wins = (trajectory: Trajectory, role: string): boolean =>
  (trajectory.returns[role] ?? 0) > Math.max(...trajectory.roles.filter((other) => other !== role).map((other) => trajectory.returns[other] ?? 0))

const mean = (values: readonly number[]): number => (values.length === 0 ? 0 : values.reduce((total, value) => total + value, 0) / values.length)
