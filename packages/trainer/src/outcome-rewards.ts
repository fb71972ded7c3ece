import type { AdvantageBatch, Sample, Trajectory } from '@ludic/core'

/**
 * The advantage batch of a rollout with outcome rewards: each role's episode return (the environment's
 * rewards summed over the episode) sits on the last response token of that role's last turn; every other
 * token gets 0. Roles, environments, trajectories and turn indices ride along for multi-agent and
 * multi-turn estimators (RAE keeps one baseline per environment and role).
 */
export function outcomeAdvantageBatch(trajectories: readonly Trajectory[], samples: readonly Sample[]): AdvantageBatch {
  const returns = new Map(trajectories.map((trajectory) => [trajectory.id, trajectory.returns]))
  const lastTurn = new Map<string, number>() // `${trajectoryId}\u0000${role}` → highest turn index
  for (const sample of samples) {
    const key = `${sample.trajectoryId}\u0000${sample.role}`
    lastTurn.set(key, Math.max(lastTurn.get(key) ?? -1, sample.turnIndex))
  }
  const tokenRewards = samples.map((sample) => {
    const rewards = new Float32Array(sample.responseTokenIds.length)
    if (lastTurn.get(`${sample.trajectoryId}\u0000${sample.role}`) === sample.turnIndex && rewards.length > 0) {
      rewards[rewards.length - 1] = returns.get(sample.trajectoryId)?.[sample.role] ?? 0
    }
    return rewards
  })
  return {
    tokenRewards,
    groupIds: samples.map((sample) => sample.groupId),
    roles: samples.map((sample) => sample.role),
    environmentIds: samples.map((sample) => sample.environmentId),
    trajectoryIds: samples.map((sample) => sample.trajectoryId),
    turnIndices: samples.map((sample) => sample.turnIndex),
  }
}
