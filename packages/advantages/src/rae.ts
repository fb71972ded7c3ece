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
   * across batches rather than within a group). The expected gradient is the same; a turn is no longer judged against
   * the average game's return but against its own state's. Default: false (one advantage per episode, SPIRAL's).
   */
  perState: z.boolean().default(false),
})
export type RaeOptions = z.input<typeof raeOptionsSchema>

/** The baselines of a RAE estimator, one per (environment, role) or (environment, role, opponent): plain JSON for trainer checkpoints. */
export const raeStateSchema = z.strictObject({
  baselines: z.array(
    z.strictObject({ environmentId: z.string(), role: z.string(), opponent: z.string().optional(), state: z.string().optional(), value: z.number() }),
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
 * call leaves the baselines untouched. With `perState` (needs `batch.stateKeys`) each turn k is its own: its
 * return-to-go G_k against b keyed by its state too, A_k = G_k − b(s_k), then b(s_k) ← α·b(s_k) + (1 − α)·G_k.
 */
export function createRae(options: RaeOptions = {}): RaeEstimator {
  const { decay, updateBeforeRead, perOpponent, perState } = parseArgument(raeOptionsSchema, options, 'options')
  type Baseline = RaeState['baselines'][number]
  const keyOf = (baseline: Omit<Baseline, 'value'>) =>
    JSON.stringify([baseline.environmentId, baseline.role, ...(perOpponent ? [baseline.opponent ?? ''] : []), ...(perState ? [baseline.state ?? ''] : [])])
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
        /** The advantage of `target` (its baseline keyed by `where`), after which `target` updates that baseline. */
        const advantageOf = (where: Omit<Baseline, 'value'>, target: number) => {
          const key = keyOf(where)
          const baseline = next.get(key) ?? { ...where, value: 0 }
          const before = baseline.value
          baseline.value = decay * before + (1 - decay) * target
          next.set(key, baseline)
          return target - (updateBeforeRead ? baseline.value : before)
        }
        if (stateKeys === undefined) {
          const advantage = advantageOf(at, episodeReturn)
          for (const sample of episode) advantages[sample] = advantage
          continue
        }
        let returnToGo = episodeReturn
        for (const sample of episode) {
          advantages[sample] = advantageOf({ ...at, state: stateKeys[sample]! }, returnToGo)
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
        if ((baseline.state !== undefined) !== perState) {
          const message = perState
            ? 'has no state: this estimator keeps one baseline per state (options.perState), the state is of one that does not'
            : 'has a state: the state is of an estimator with options.perState, this one does not key baselines by state'
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
