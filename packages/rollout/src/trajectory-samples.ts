import type { Sample, Trajectory } from '@ludic/core'

export interface TrajectorySampleOptions {
  /** Only turns played by these policies (by `PolicyV1.id`) become samples. Default: every policy's. */
  learnerPolicyIds?: readonly string[] | undefined
  /** Only turns of these roles become samples. Default: every role's. */
  trainRoles?: readonly string[] | undefined
  /**
   * Stamped on every sample (the weights version that generated it, for asynchronous collection). A sample whose
   * completion carries per-token versions (`Completion.tokenPolicyVersions`) gets the oldest of them instead.
   */
  policyVersion?: number | undefined
}

/**
 * The training samples of a trajectory: one per turn a policy played (its completion's prompt and
 * response ids and rollout log-probabilities, and the turn's state key when the environment gave one),
 * filtered by policy and role. When the completion says which policy version sampled each token
 * (`tokenPolicyVersions`, a partial rollout's tokens can be of several), the sample carries them and its
 * `policyVersion` is the oldest of them (the conservative one: its staleness is the largest of its tokens');
 * otherwise `policyVersion` is the one stamped (`options.policyVersion`). A failed trajectory (`error`
 * set) yields none: its turns lack an outcome. Typed arrays are shared with the trajectory, not copied.
 */
export function trajectoryToSamples(trajectory: Trajectory, options: TrajectorySampleOptions = {}): Sample[] {
  if (trajectory.error !== undefined) return []
  const samples: Sample[] = []
  for (const turn of trajectory.turns) {
    const completion = turn.completion
    if (completion === undefined) continue
    if (options.learnerPolicyIds !== undefined && (turn.policyId === undefined || !options.learnerPolicyIds.includes(turn.policyId))) continue
    if (options.trainRoles !== undefined && !options.trainRoles.includes(turn.role)) continue
    samples.push({
      trajectoryId: trajectory.id,
      turnIndex: turn.index,
      role: turn.role,
      environmentId: trajectory.environmentId,
      groupId: trajectory.groupId,
      promptTokenIds: completion.promptTokenIds,
      responseTokenIds: completion.tokenIds,
      rolloutLogprobs: completion.logprobs,
      invalid: turn.invalidAction,
      ...(turn.stateKey === undefined ? {} : { stateKey: turn.stateKey }),
      ...versionsOf(completion.tokenPolicyVersions, options.policyVersion),
    })
  }
  return samples
}

/** A sample's version fields: its tokens' versions and the oldest of them, else the stamped version (none when neither). */
function versionsOf(tokenPolicyVersions: Int32Array | undefined, stamped: number | undefined): Pick<Sample, 'policyVersion' | 'tokenPolicyVersions'> {
  const oldest = tokenPolicyVersions === undefined || tokenPolicyVersions.length === 0 ? stamped : tokenPolicyVersions.reduce((a, b) => Math.min(a, b))
  return {
    ...(oldest === undefined ? {} : { policyVersion: oldest }),
    ...(tokenPolicyVersions === undefined ? {} : { tokenPolicyVersions }),
  }
}
