import { InvalidArgumentError, type AdvantageBatch } from '@ludic/core'

/**
 * The episodes of a batch for the multi-turn estimators: the samples (turns) of one role in one
 * trajectory (`batch.trajectoryIds`, `batch.roles`), in turn order (`batch.turnIndices`, else batch
 * order), listed in order of first appearance. Without trajectory ids every sample is its own episode.
 */
export function episodesOf(batch: AdvantageBatch): number[][] {
  const trajectoryIds = batch.trajectoryIds
  if (trajectoryIds === undefined) return batch.tokenRewards.map((_, sample) => [sample])
  const byTrajectory = new Map<string, Map<string, number[]>>()
  const episodes: number[][] = []
  trajectoryIds.forEach((trajectoryId, sample) => {
    const role = batch.roles?.[sample] ?? ''
    let roles = byTrajectory.get(trajectoryId)
    if (roles === undefined) byTrajectory.set(trajectoryId, (roles = new Map()))
    let episode = roles.get(role)
    if (episode === undefined) {
      roles.set(role, (episode = []))
      episodes.push(episode)
    }
    episode.push(sample)
  })
  const turnIndices = batch.turnIndices
  if (turnIndices === undefined) return episodes
  for (const episode of episodes) {
    episode.sort((a, b) => turnIndices[a]! - turnIndices[b]!) // stable: ties keep batch order
    for (let position = 1; position < episode.length; position++) {
      const earlier = episode[position - 1]!
      const later = episode[position]!
      if (turnIndices[earlier] === turnIndices[later]) {
        throw new InvalidArgumentError({
          argument: `batch.turnIndices[${later}]`,
          value: turnIndices[later],
          message: `repeats turn ${turnIndices[later]} of trajectory '${trajectoryIds[later]}', already held by sample ${earlier}`,
        })
      }
    }
  }
  return episodes
}

/** Per sample, the undiscounted total reward of its episode. */
export function episodeReturns(episodes: readonly number[][], turnRewards: Float64Array): Float64Array {
  const totals = new Float64Array(turnRewards.length)
  for (const episode of episodes) {
    let total = 0
    for (const sample of episode) total += turnRewards[sample]!
    for (const sample of episode) totals[sample] = total
  }
  return totals
}

/** Per sample, the discounted return from its turn to the end of its episode: G_k = r_k + γ·G_{k+1}. */
export function turnReturns(episodes: readonly number[][], turnRewards: Float64Array, gamma: number): Float64Array {
  const returns = new Float64Array(turnRewards.length)
  for (const episode of episodes) {
    let running = 0
    for (let position = episode.length - 1; position >= 0; position--) {
      const sample = episode[position]!
      running = turnRewards[sample]! + gamma * running
      returns[sample] = running
    }
  }
  return returns
}
