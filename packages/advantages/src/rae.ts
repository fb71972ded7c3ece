import { InvalidArgumentError, parseArgument, type AdvantageEstimatorV1 } from '@ludic/core'
import { z } from 'zod'
import { broadcastToTokens, parseAdvantageBatch, requireField, sampleScores } from './batch.js'
import { episodesOf } from './episodes.js'

export const raeOptionsSchema = z.strictObject({
  /** α, the weight the baseline keeps at each update. Default: 0.95 (SPIRAL's `role_baseline_ema_gamma`). */
  decay: z.number().gt(0).lt(1).default(0.95),
  /** Update the baseline with an episode's return before subtracting it. Default: false (SPIRAL's code reads first). */
  updateBeforeRead: z.boolean().default(false),
  /**
   * One baseline per (environment, role, opponent) instead of per (environment, role): the opponent is
   * `batch.opponentIds` (the policies that played the episode's other roles). SPIRAL's learner plays only itself;
   * against a mix of opponents (a random player, a perfect one, a league) one baseline per role compares a draw
   * against perfect play with wins against random play, and every game against the stronger opponent gets a
   * negative advantage whatever was played. Default: false (SPIRAL's).
   */
  perOpponent: z.boolean().default(false),
  /**
   * One baseline per state too: each turn is keyed by its state (`batch.stateKeys`, the environment's `stateKey`) and
   * gets its own advantage, its return-to-go G_k = Σ_{j ≥ k} r_j less the baseline of its state, which G_k then
   * updates — a tabular state-value baseline (Williams 1992's state-dependent baseline; GiGPO's anchor states keyed
   * across batches rather than within a group). A state met for the first time starts from its episode's per-role
   * baseline, and its first visits are averaged (rate max(1 − α, 1/visits)), so that rare states are not judged
   * against 0. The expected gradient is the same; a turn is no longer judged against the average game's return but
   * against its own state's. Needs `batch.trajectoryIds` and `batch.turnIndices` (the turns' order in their episode).
   * Default: false (one advantage per episode, SPIRAL's).
   */
  perState: z.boolean().default(false),
})
export type RaeOptions = z.input<typeof raeOptionsSchema>

/**
 * The baselines of a RAE estimator, one per (environment, role) or (environment, role, opponent), and with `perState`
 * one per (…, state) besides, with its visits: plain JSON for trainer checkpoints.
 */
export const raeStateSchema = z.strictObject({
  baselines: z.array(
    z.strictObject({
      environmentId: z.string(),
      role: z.string(),
      opponent: z.string().optional(),
      state: z.string().optional(),
      visits: z.number().int().min(1).optional(),
      value: z.number(),
    }),
  ),
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
 * `batch.environmentIds` (and `batch.opponentIds` with `perOpponent`, which keys b by the opponent too); a failed
 * call leaves the baselines untouched. With `perState` (needs `batch.stateKeys`, `trajectoryIds`, `turnIndices`)
 * each turn k is its own: its return-to-go G_k against b keyed by its state too, A_k = G_k − b(s_k), then
 * b(s_k) ← b(s_k) + max(1 − α, 1/n)·(G_k − b(s_k)) at its n-th visit; a state's first read is its episode's b above
 * (read before that episode's update), which the episode's return updates as without `perState`.
 */
export function createRae(options: RaeOptions = {}): RaeEstimator {
  const { decay, updateBeforeRead, perOpponent, perState } = parseArgument(raeOptionsSchema, options, 'options')
  type Baseline = RaeState['baselines'][number]
  // A per-state baseline's key is its episode's (environment, role[, opponent]) key and its state.
  const keyOf = (baseline: Omit<Baseline, 'value'>) =>
    JSON.stringify([
      baseline.environmentId,
      baseline.role,
      ...(perOpponent ? [baseline.opponent ?? ''] : []),
      ...(baseline.state === undefined ? [] : [baseline.state]),
    ])
  const needs = ['roles', 'environmentIds', ...(perOpponent ? ['opponentIds' as const] : []), ...(perState ? ['stateKeys' as const] : [])] as const
  let baselines = new Map<string, Baseline>()
  return {
    specificationVersion: 'v1',
    name: 'rae',
    requires: [...needs],
    estimate(input) {
      const batch = parseAdvantageBatch(input)
      const roles = requireField(batch, 'roles', 'rae', 'it keeps one baseline per (environment, role)')
      const environmentIds = requireField(batch, 'environmentIds', 'rae', 'it keeps one baseline per (environment, role)')
      const opponentIds = perOpponent
        ? requireField(batch, 'opponentIds', 'rae', 'with perOpponent it keeps one baseline per (environment, role, opponent)')
        : undefined
      const stateKeys = perState ? requireField(batch, 'stateKeys', 'rae', 'with perState it keeps one baseline per state') : undefined
      if (perState) {
        // Without them every sample would be an episode of its own, and a turn's return-to-go its own reward only.
        requireField(batch, 'trajectoryIds', 'rae', "with perState a turn's return-to-go sums the rest of its episode")
        requireField(batch, 'turnIndices', 'rae', "with perState a turn's return-to-go sums the rest of its episode")
      }
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
          if (opponentIds !== undefined && opponentIds[sample] !== opponentIds[episode[0]!]) {
            const message = `differs from the opponent '${opponentIds[episode[0]!]}' of sample ${episode[0]} in the same trajectory`
            throw new InvalidArgumentError({ argument: `batch.opponentIds[${sample}]`, value: opponentIds[sample], message })
          }
          episodeReturn += scores[sample]!
        }
        const at = { environmentId, role, ...(opponentIds === undefined ? {} : { opponent: opponentIds[episode[0]!]! }) }
        const key = keyOf(at)
        const baseline = next.get(key) ?? { ...at, value: 0 }
        const before = baseline.value
        baseline.value = decay * before + (1 - decay) * episodeReturn
        next.set(key, baseline)
        if (stateKeys === undefined) {
          const advantage = episodeReturn - (updateBeforeRead ? baseline.value : before)
          for (const sample of episode) advantages[sample] = advantage
          continue
        }
        let returnToGo = episodeReturn
        for (const sample of episode) {
          const where = { ...at, state: stateKeys[sample]! }
          const stateKey = keyOf(where)
          const state = next.get(stateKey) ?? { ...where, visits: 0, value: before }
          const stateBefore = state.value
          state.visits = (state.visits ?? 0) + 1
          state.value = stateBefore + Math.max(1 - decay, 1 / state.visits) * (returnToGo - stateBefore)
          next.set(stateKey, state)
          advantages[sample] = returnToGo - (updateBeforeRead ? state.value : stateBefore)
          returnToGo -= scores[sample]!
        }
      }
      baselines = next
      return broadcastToTokens(batch, advantages)
    },
    getState: () => ({ baselines: [...baselines.values()].map((baseline) => ({ ...baseline })) }),
    setState(state) {
      const parsed = parseArgument(raeStateSchema, state, 'state')
      parsed.baselines.forEach((baseline, index) => {
        if (baseline.state !== undefined && !perState) {
          const message = 'has a state: the state is of an estimator with options.perState, this one does not key baselines by state'
          throw new InvalidArgumentError({ argument: `state.baselines.${index}`, value: baseline, message })
        }
        if ((baseline.state === undefined) !== (baseline.visits === undefined)) {
          const message = 'must have both a state and its visits (a per-state baseline) or neither (a per-role one)'
          throw new InvalidArgumentError({ argument: `state.baselines.${index}`, value: baseline, message })
        }
        if ((baseline.opponent !== undefined) === perOpponent) return
        const message = perOpponent
          ? 'has no opponent: this estimator keeps one baseline per opponent (options.perOpponent), the state is of one that does not'
          : 'has an opponent: the state is of an estimator with options.perOpponent, this one keeps one baseline per role'
        throw new InvalidArgumentError({ argument: `state.baselines.${index}`, value: baseline, message })
      })
      baselines = new Map(parsed.baselines.map((baseline) => [keyOf(baseline), { ...baseline }]))
    },
  }
}
