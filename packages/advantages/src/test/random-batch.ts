/** Test support: seeded random ragged batches with every optional field. Not part of the package's API. */
import type { AdvantageBatch, Random } from '@ludic/core'

export interface RandomBatchOptions {
  samples: number
  /** Longest sample, in tokens (at least 1). */
  maxLength: number
  /** Number of distinct group ids. */
  groups: number
  /** Give some samples a mask with a masked span in the middle. */
  masks?: boolean
  /** Give each valid token a small reward too, not only the last one. */
  denseRewards?: boolean
}

/**
 * A batch where each sample's outcome reward (in [−1, 1]) sits on its last valid token, with values,
 * REMAX baselines, roles, environments, trajectories of up to 3 turns, turn indices and state keys.
 */
export function randomBatch(random: Random, options: RandomBatchOptions): AdvantageBatch {
  const tokenRewards: Float32Array[] = []
  const tokenMasks: Uint8Array[] = []
  for (let sample = 0; sample < options.samples; sample++) {
    const length = 1 + random.nextInt(options.maxLength)
    const mask = new Uint8Array(length).fill(1)
    if (options.masks === true && length >= 3 && random.nextFloat() < 0.5) {
      const start = 1 + random.nextInt(length - 2)
      mask.fill(0, start, start + 1 + random.nextInt(length - 1 - start))
    }
    const rewards = new Float32Array(length)
    if (options.denseRewards === true) for (let token = 0; token < length; token++) rewards[token] = mask[token]! * (random.nextFloat() - 0.5) * 0.1
    let last = length - 1
    while (mask[last] === 0) last--
    rewards[last] = random.nextFloat() * 2 - 1
    tokenRewards.push(rewards)
    tokenMasks.push(mask)
  }
  const perSample = <T>(make: (sample: number) => T) => tokenRewards.map((_, sample) => make(sample))
  const trajectoryIds = perSample((sample) => `trajectory-${Math.floor(sample / 3)}`)
  return {
    tokenRewards,
    groupIds: perSample(() => `group-${random.nextInt(options.groups)}`),
    roles: perSample(() => `player${random.nextInt(2)}`),
    environmentIds: perSample((sample) => `environment-${Math.floor(sample / 3) % 2}`),
    values: tokenRewards.map((rewards) => Float32Array.from(rewards, () => random.nextNormal())),
    ...(options.masks === true ? { tokenMasks } : {}),
    baselineRewards: perSample(() => random.nextFloat() * 2 - 1),
    trajectoryIds,
    turnIndices: perSample((sample) => sample % 3),
    stateKeys: perSample(() => `state-${random.nextInt(3)}`),
  }
}
