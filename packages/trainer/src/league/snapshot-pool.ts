import { InvalidArgumentError, parseArgument, type Random } from '@ludic/core'
import { z } from 'zod'

/** How a pool member is drawn for a game: uniformly, favouring recent snapshots, or by how often they beat the learner. */
export const snapshotSamplings = ['uniform', 'recency', 'pfsp'] as const
export type SnapshotSampling = (typeof snapshotSamplings)[number]

/**
 * PFSP's weighting f(x) of the learner's win rate x against a member (AlphaStar, Vinyals et al. 2019, and its
 * pseudocode's `pfsp`): `squared` f(x) = (1 − x)², AlphaStar's f_hard with p = 2 (the members the learner loses to);
 * `variance` f(x) = x(1 − x) (the members near the learner's level).
 */
export const pfspWeightings = ['squared', 'variance'] as const
export type PfspWeighting = (typeof pfspWeightings)[number]

/** The default bound on the snapshots held in memory (1 GiB of float32 values). */
export const defaultSnapshotPoolBytes = 1024 ** 3

/**
 * The league's pool of the learner's own past snapshots (fictitious self-play; SPIRAL's fixed-opponent ablations,
 * AlphaStar's league), one entry of the trainer's `opponents`: in a `share` of the episodes one seat is played by a
 * snapshot drawn from the pool.
 */
export const snapshotPoolConfigSchema = z.strictObject({
  pool: z.literal('snapshots'),
  /** Fraction of the episodes a snapshot plays in, in (0, 1] (with the other opponents' shares, at most 1 in all). */
  share: z.number().gt(0).max(1),
  /** A snapshot of the weights is taken before step 0 (the starting weights) and every `every` steps after. Default 10. */
  every: z.number().int().positive().default(10),
  /** Snapshots kept at most; when one more is taken the oldest is dropped. Default 20. */
  keep: z.number().int().positive().max(1000).default(20),
  /**
   * How a game's snapshot is drawn: `uniform`; `recency`, the i-th oldest of n with weight i (the newest n times as
   * likely as the oldest); `pfsp`, weight f(x) of the learner's win rate x against it (`pfspWeighting`). Default `uniform`.
   */
  sampling: z.enum(snapshotSamplings).default('uniform'),
  /** PFSP's f(x): `squared` (1 − x)², or `variance` x(1 − x). Default `squared`. */
  pfspWeighting: z.enum(pfspWeightings).default('squared'),
  /**
   * The learner's win rate against a member is taken over its last this-many games with it (a win 1, a tie ½),
   * Laplace-smoothed: (score + 1) / (games + 2), ½ before any game. Default 64.
   */
  winRateWindow: z.number().int().positive().max(100_000).default(64),
  /** The pool's Bradley–Terry ratings are fitted on the last this-many league games (`league/rating/<player>`). Default 2000. */
  ratingWindow: z.number().int().positive().max(1_000_000).default(2000),
  /**
   * The most bytes the kept snapshots may take in memory (float32: 4 bytes per trainable parameter, times `keep`);
   * more is refused when the trainer is built. Default 1 GiB.
   */
  maxBytes: z.number().int().positive().default(defaultSnapshotPoolBytes),
})
export type SnapshotPoolConfig = z.input<typeof snapshotPoolConfigSchema>
export type ParsedSnapshotPoolConfig = z.output<typeof snapshotPoolConfigSchema>

/** One snapshot of the pool: the learner's weights after `step` updates, as the policy id `snapshot-<step>`. */
export interface PoolMember {
  step: number
  /** The learner's scores in its last games with this member (1 win, ½ tie, 0 loss), oldest first, at most `winRateWindow`. */
  scores: number[]
}

/** The pool's plain state (a checkpoint's): its members, oldest first. */
export interface SnapshotPoolState {
  members: { step: number; scores: number[] }[]
}

export const snapshotPolicyId = (step: number) => `snapshot-${step}`

/**
 * Which snapshots the pool holds and how one is drawn: plain data (no weights), so that its sampling and bounds are
 * checked alone and its state is a checkpoint's JSON.
 */
export class SnapshotPool {
  readonly config: ParsedSnapshotPoolConfig
  private members: PoolMember[] = []

  constructor(config: ParsedSnapshotPoolConfig) {
    this.config = config
  }

  /** The members, oldest first. */
  get all(): readonly Readonly<PoolMember>[] {
    return this.members
  }

  /**
   * Whether a snapshot is due before step `stepIndex` (0-based): at 0 and every `every` steps, and whenever the pool is
   * empty (a run resumed from a checkpoint written without a league).
   */
  isDue(stepIndex: number): boolean {
    if (this.members.length === 0) return true
    return stepIndex % this.config.every === 0 && this.members.at(-1)!.step < stepIndex
  }

  /** Adds the snapshot of step `step` (newest); returns the steps of the members dropped to stay within `keep` (oldest first). */
  add(step: number): number[] {
    const newest = this.members.at(-1)
    if (newest !== undefined && step <= newest.step)
      throw new InvalidArgumentError({ argument: 'step', value: step, message: `must be after the newest snapshot's (${newest.step})` })
    this.members.push({ step, scores: [] })
    const dropped = this.members.splice(0, Math.max(0, this.members.length - this.config.keep))
    return dropped.map((member) => member.step)
  }

  /** The learner's smoothed win rate against the member of `step`: (score + 1) / (games + 2) over its window. */
  winRate(step: number): number {
    const { scores } = this.member(step)
    return (scores.reduce((total, score) => total + score, 0) + 1) / (scores.length + 2)
  }

  /** Records a game of the learner against the member of `step` (1 the learner won, ½ tie, 0 lost); a dropped member's is ignored. */
  record(step: number, score: number): void {
    const member = this.members.find((candidate) => candidate.step === step)
    if (member === undefined) return
    member.scores.push(score)
    if (member.scores.length > this.config.winRateWindow) member.scores.splice(0, member.scores.length - this.config.winRateWindow)
  }

  /** The sampling weights of the members, oldest first (not normalised). */
  weights(): number[] {
    const { sampling, pfspWeighting } = this.config
    return this.members.map((member, index) => {
      if (sampling === 'uniform') return 1
      if (sampling === 'recency') return index + 1
      const x = this.winRate(member.step)
      return pfspWeighting === 'squared' ? (1 - x) ** 2 : x * (1 - x)
    })
  }

  /** The probability of drawing each member, oldest first. */
  probabilities(): number[] {
    const weights = this.weights()
    const total = weights.reduce((sum, weight) => sum + weight, 0)
    return weights.map((weight) => weight / total)
  }

  /** Draws a member's step with `random`, by the weights (the pool must not be empty): `random.sampleIndex(weights())`. */
  draw(random: Random): number {
    if (this.members.length === 0) throw new InvalidArgumentError({ argument: 'pool', value: 0, message: 'has no snapshot to draw' })
    return this.members[random.sampleIndex(this.weights())]!.step
  }

  getState(): SnapshotPoolState {
    return { members: this.members.map((member) => ({ step: member.step, scores: [...member.scores] })) }
  }

  setState(state: SnapshotPoolState): void {
    const parsed = parseArgument(poolStateSchema, state, 'state')
    this.members = parsed.members.slice(-this.config.keep).map((member) => ({ step: member.step, scores: member.scores.slice(-this.config.winRateWindow) }))
  }

  private member(step: number): PoolMember {
    const member = this.members.find((candidate) => candidate.step === step)
    if (member === undefined)
      throw new InvalidArgumentError({ argument: 'step', value: step, message: `is no member of the pool (${this.members.map((m) => m.step).join(', ')})` })
    return member
  }
}

const poolStateSchema = z.strictObject({
  members: z.array(z.strictObject({ step: z.number().int().min(0), scores: z.array(z.number().min(0).max(1)) })),
})
