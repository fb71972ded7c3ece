import { parseArgument, policySchema, type Sample, type Trajectory } from '@ludic/core'
import { collect, collectOptionsSchema, defaultPromptTemplate, renderPrompt, type GenerationOptions, type PromptTemplate } from '@ludic/rollout'
import { z } from 'zod'
import { rolloutMetrics } from './rl-metrics.js'

const promptTemplateSchema = z.custom<PromptTemplate>(
  (value) => typeof value === 'string' || typeof value === 'function',
  'must be a prompt template (a string or a function)',
)

export const evaluateAgainstOptionsSchema = z.strictObject({
  /** The policy measured; only its moves become samples (its id must differ from the opponent's). */
  learner: policySchema,
  /** The other seat(s): a scripted opponent, another model… */
  opponent: policySchema,
  /** Environment factories, as for `collect`: every one plays every episode. */
  environments: collectOptionsSchema.shape.environments,
  /** Episodes per environment. Seats alternate: in episode k the learner plays the environment's role k mod (number of roles). */
  episodes: z.number().int().positive(),
  /** Episode k is reset with `seed · 100000 + k`; the sampling seed too. */
  seed: z.number().int(),
  /** The learner's prompt (a `@ludic/rollout` `PromptTemplate`). Default `'{observation}'`. */
  prompt: promptTemplateSchema.default(defaultPromptTemplate),
  /** The opponent's prompt. Default `'{observation}'`. A scripted opponent decides from each request's turn view (`GenerationRequest.turn`), whatever its prompt says. */
  opponentPrompt: promptTemplateSchema.default(defaultPromptTemplate),
  /** Sampling of every request (`collect`'s `generation`), e.g. `{ maxTokens: 8, temperature: 1 }`. */
  generation: z.custom<GenerationOptions>((value) => typeof value === 'object' && value !== null, 'must be generation options').optional(),
  /** Episodes in flight at most. Default 256. */
  concurrency: z.number().int().positive().default(256),
})
export type EvaluateAgainstOptions = z.input<typeof evaluateAgainstOptionsSchema>

/** The learner's results over a set of episodes. */
export interface MatchFigures {
  episodes: number
  /** Share of episodes whose return the learner's beats every other seat's (the trainer's `winRate`). */
  winRate: number
  /** Wilson score interval of `winRate`, 95%. */
  winRateInterval: [number, number]
  /** Share of episodes the learner ties the best other seat. */
  drawRate: number
  lossRate: number
  /** The learner's mean return (the trainer's `reward/<environment>/<role>`). */
  meanReward: number
  /** Share of the learner's moves that were invalid (the trainer's `invalidRate`). */
  invalidRate: number
  /** Win rate in each seat the learner played (`{ player0, player1 }`). */
  winRateBySeat: Record<string, number>
}

export interface MatchResult extends MatchFigures {
  /** The same figures per environment id (several environments at once). */
  byEnvironment: Record<string, MatchFigures>
  /** Every episode, in `collect`'s order (environment, then seed). */
  trajectories: Trajectory[]
  /** The learner's seat in each trajectory (aligned with `trajectories`). */
  learnerSeats: string[]
  /** The learner's moves. */
  samples: Sample[]
}

/**
 * The learner against an opponent: `episodes` seeded episodes of each environment through `@ludic/rollout`'s
 * `collect`, seats alternating, the learner's prompt for the learner and `opponentPrompt` for the other seats.
 * The figures are the trainer's per-step `rolloutMetrics` seen from the learner's seat, plus draws, losses,
 * per-seat win rates and a Wilson interval. A failed episode is an error (thrown), not a loss.
 */
export async function evaluateAgainst(options: EvaluateAgainstOptions): Promise<MatchResult> {
  const parsed = parseArgument(evaluateAgainstOptionsSchema, options, 'options')
  const { learner, opponent, seed } = parsed
  const seeds = Array.from({ length: parsed.episodes }, (_, index) => seed * 100_000 + index)
  const seatOf = (roles: readonly string[], episodeSeed: number) => roles[(episodeSeed - seed * 100_000) % roles.length]!
  const learnerSeat = new Map<string, string>() // `<environmentId>/<seed>` → role
  const { trajectories, samples, failures } = await collect({
    environments: parsed.environments,
    policies: ({ role, environmentId, seed: episodeSeed, roles }) => {
      const seat = seatOf(roles, episodeSeed)
      learnerSeat.set(`${environmentId}/${episodeSeed}`, seat)
      return role === seat ? learner : opponent
    },
    seeds,
    prompt: (view, history, context) =>
      renderPrompt(view.role === learnerSeat.get(`${context.environmentId}/${context.seed}`) ? parsed.prompt : parsed.opponentPrompt, view, history, context),
    ...(parsed.generation === undefined ? {} : { generation: parsed.generation }),
    samplingSeed: seed,
    learnerPolicyIds: [learner.id],
    concurrency: parsed.concurrency,
  })
  if (failures.length > 0) throw failures[0]!.error
  const learnerSeats = trajectories.map((trajectory) => seatOf(trajectory.roles, trajectory.seed))
  const views = trajectories.map((trajectory, index) => fromSeat(trajectory, learnerSeats[index]!))
  const byEnvironment: Record<string, MatchFigures> = {}
  for (const environmentId of new Set(trajectories.map((trajectory) => trajectory.environmentId))) {
    const played = views.filter((_, index) => trajectories[index]!.environmentId === environmentId)
    byEnvironment[environmentId] = matchFigures(
      played,
      samples.filter((sample) => sample.environmentId === environmentId),
    )
  }
  return { ...matchFigures(views, samples), byEnvironment, trajectories, learnerSeats, samples }
}

/** A trajectory from the learner's seat (`seat`): two roles, the learner and the best of the others. */
interface SeatView {
  seat: string
  trajectory: Trajectory
}

function fromSeat(trajectory: Trajectory, seat: string): SeatView {
  const others = trajectory.roles.filter((role) => role !== seat).map((role) => trajectory.returns[role] ?? 0)
  const returns = { learner: trajectory.returns[seat] ?? 0, opponent: Math.max(...others) }
  return { seat, trajectory: { ...trajectory, environmentId: 'match', roles: ['learner', 'opponent'], returns } }
}

function matchFigures(views: readonly SeatView[], samples: readonly Sample[]): MatchFigures {
  const seen = views.map((view) => view.trajectory)
  const metrics = rolloutMetrics(seen, samples)
  const episodes = seen.length
  const winRate = metrics['winRate/match/learner'] ?? 0
  const draws = seen.filter((trajectory) => trajectory.returns.learner === trajectory.returns.opponent).length
  const losses = seen.filter((trajectory) => trajectory.returns.learner! < trajectory.returns.opponent!).length
  const winRateBySeat: Record<string, number> = {}
  for (const seat of new Set(views.map((view) => view.seat))) {
    winRateBySeat[seat] = rolloutMetrics(
      views.filter((view) => view.seat === seat).map((view) => view.trajectory),
      [],
    )['winRate/match/learner']!
  }
  return {
    episodes,
    winRate,
    winRateInterval: wilsonInterval(Math.round(winRate * episodes), episodes),
    drawRate: episodes === 0 ? 0 : draws / episodes,
    lossRate: episodes === 0 ? 0 : losses / episodes,
    meanReward: metrics['reward/match/learner'] ?? 0,
    invalidRate: metrics.invalidRate ?? 0,
    winRateBySeat,
  }
}

/**
 * The Wilson score interval of a proportion, `successes` of `trials` (95% with the default z = 1.96):
 * unlike p ± z·√(p(1−p)/n) it stays inside [0, 1] and is not empty at 0 or n successes. [0, 1] for no trials.
 */
export function wilsonInterval(successes: number, trials: number, z = 1.959963984540054): [number, number] {
  if (trials === 0) return [0, 1]
  const proportion = successes / trials
  const zSquared = z * z
  const denominator = 1 + zSquared / trials
  const center = (proportion + zSquared / (2 * trials)) / denominator
  const half = (z / denominator) * Math.sqrt((proportion * (1 - proportion)) / trials + zSquared / (4 * trials * trials))
  // At 0 or n successes the bound is exactly 0 or 1 (rounding would leave it a hair inside and exclude the rate).
  return [successes === 0 ? 0 : Math.max(0, center - half), successes === trials ? 1 : Math.min(1, center + half)]
}
