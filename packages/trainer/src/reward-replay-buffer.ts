import { InvalidArgumentError, parseArgument, type Random } from '@ludic/core'
import { z } from 'zod'

export const rewardReplayBufferOptionsSchema = z.strictObject({
  /** Trajectories kept per prompt: the highest log-rewards. Default 50 (FoR's buffer). */
  capacity: z.number().int().positive().max(1_000_000).default(50),
})
export type RewardReplayBufferOptions = z.input<typeof rewardReplayBufferOptionsSchema>

/** A stored trajectory: its actions (its identity, so the same plan is kept once) and its terminal log-reward. */
export interface ReplayedTrajectory {
  actions: readonly string[]
  logReward: number
}

/** Per-prompt buffers of the best trajectories seen (see `createRewardReplayBuffer`). */
export interface RewardReplayBuffer {
  /**
   * Offers a trajectory for `key`'s buffer. A plan already stored is not added twice; a full buffer keeps its
   * `capacity` highest log-rewards (the lowest goes; of equal ones, the earlier stays). Returns whether it is stored now.
   */
  add(key: string, trajectory: ReplayedTrajectory): boolean
  /** `count` trajectories of `key`'s buffer drawn uniformly with replacement; `[]` when the buffer is empty. */
  sample(key: string, count: number, random: Random): ReplayedTrajectory[]
  /** Trajectories stored for `key`. */
  size(key: string): number
  /** Trajectories stored over every prompt. */
  readonly totalSize: number
  /** The stored trajectories of `key`, best first. */
  entries(key: string): readonly ReplayedTrajectory[]
  /** Every buffer as plain data, for checkpoints: `[key, trajectories best first]` in the order the keys were first seen. */
  getState(): RewardReplayBufferState
  /** Replaces every buffer with `state` (what `getState` gave); each buffer keeps at most `capacity`. */
  setState(state: RewardReplayBufferState): void
}

export const rewardReplayBufferStateSchema = z.array(
  z.tuple([z.string(), z.array(z.strictObject({ actions: z.array(z.string()), logReward: z.number().finite() }))]),
)
export type RewardReplayBufferState = z.infer<typeof rewardReplayBufferStateSchema>

/**
 * The reward-prioritised replay buffer of Flow of Reasoning (Yu et al. 2024, https://arxiv.org/abs/2406.05673;
 * after the GFlowNet fine-tuning of Hu et al. 2024): for each prompt, the `capacity` highest-reward
 * trajectories seen, each plan once. Off-policy replay of them is what lets trajectory balance keep the mass of
 * rare high-reward solutions the sampler found once; the buffer stores log R with each plan, the caller
 * recomputes log P_F under the current policy.
 */
export function createRewardReplayBuffer(options: RewardReplayBufferOptions = {}): RewardReplayBuffer {
  const { capacity } = parseArgument(rewardReplayBufferOptionsSchema, options, 'options')
  const buffers = new Map<string, { plans: Set<string>; items: ReplayedTrajectory[] }>()
  let totalSize = 0
  const planOf = (actions: readonly string[]) => JSON.stringify(actions)
  return {
    add(key, trajectory) {
      if (!Array.isArray(trajectory?.actions) || !Number.isFinite(trajectory.logReward)) {
        throw new InvalidArgumentError({ argument: 'trajectory', value: trajectory, message: 'must be { actions: string[], logReward: finite number }' })
      }
      let buffer = buffers.get(key)
      if (buffer === undefined) {
        buffer = { plans: new Set(), items: [] }
        buffers.set(key, buffer)
      }
      const plan = planOf(trajectory.actions)
      if (buffer.plans.has(plan)) return false
      const stored = { actions: [...trajectory.actions], logReward: trajectory.logReward }
      // Best first; a newcomer goes after the entries with an equal log-reward, so of a tie the earlier stays.
      let position = buffer.items.findIndex((item) => item.logReward < stored.logReward)
      if (position === -1) position = buffer.items.length
      if (position >= capacity) return false
      buffer.items.splice(position, 0, stored)
      buffer.plans.add(plan)
      totalSize++
      if (buffer.items.length > capacity) {
        const dropped = buffer.items.pop()!
        buffer.plans.delete(planOf(dropped.actions))
        totalSize--
      }
      return true
    },
    sample(key, count, random) {
      const items = buffers.get(key)?.items ?? []
      if (items.length === 0) return []
      return Array.from({ length: count }, () => items[random.nextInt(items.length)]!)
    },
    size: (key) => buffers.get(key)?.items.length ?? 0,
    get totalSize() {
      return totalSize
    },
    entries: (key) => buffers.get(key)?.items ?? [],
    getState: () => [...buffers].map(([key, buffer]) => [key, buffer.items.map((item) => ({ actions: [...item.actions], logReward: item.logReward }))]),
    setState(state) {
      const parsed = parseArgument(rewardReplayBufferStateSchema, state, 'state')
      buffers.clear()
      totalSize = 0
      for (const [key, items] of parsed) {
        const kept = items.slice(0, capacity)
        buffers.set(key, { plans: new Set(kept.map((item) => planOf(item.actions))), items: kept })
        totalSize += kept.length
      }
    },
  }
}
