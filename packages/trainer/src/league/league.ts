import * as tf from '@tensorflow/tfjs-core'
import { deriveSeed, InvalidArgumentError, LudicError, parseArgument, type ChatMessage, type PolicyV1, type TokenizerV1, type Trajectory } from '@ludic/core'
import { attachedLoraAdapters, attachLora, CausalLanguageModel, createLocalPolicy } from '@ludic/model'
import type { PolicyContext } from '@ludic/rollout'
import { z } from 'zod'
import { nodePlatform } from '../platform.js'
import type { JsonValue } from '../run-state.js'
import { seatPolicies, type Opponent } from '../opponents.js'
import { PoolRatings } from './pool-ratings.js'
import type { SnapshotFiles, SnapshotValues } from './snapshot-files.js'
import { SnapshotPool, snapshotPolicyId, type ParsedSnapshotPoolConfig, type SnapshotPoolState } from './snapshot-pool.js'

/** A fixed opponent of the trainer's `opponents` (`{ policy, share, seats? }`), as the league sees it. */
export interface FixedOpponent {
  policy: PolicyV1
  share: number
  seats?: Readonly<Record<string, number>> | undefined
}

export interface LeagueOptions {
  /** The learner. */
  model: CausalLanguageModel
  tokenizer: TokenizerV1
  chatTemplate?: string | ((messages: readonly ChatMessage[]) => string) | undefined
  /** Requests per `generate` batch of a snapshot's policy. */
  maxGenerationBatch: number
  /** The run's seed (the episodes' draws and the snapshots' sampling seeds). */
  seed: number
  /** The trainer's `opponents`, one of them the snapshot pool (at `poolIndex`). */
  opponents: readonly (FixedOpponent | ParsedSnapshotPoolConfig)[]
  /** The learner's policy id (its turns are the trained ones). */
  learnerId: string
  /** Where the snapshots are kept on disk (`<runDirectory>/league/`). Default: memory only. */
  runDirectory?: string | undefined
  /** Checkpoints the run keeps: a snapshot file stays while one of them names it. */
  keepLast: number
}

/** Which opponent played which seat of which episode of a step, by trajectory id: what the league records after the rollout. */
export type LeagueSeating = Map<string, { opponent: string; seat: string }>

/** One step's seats: the policies function for `collect`, the seating it filled, and the snapshot models to free. */
export interface LeagueStep {
  policies: (context: PolicyContext) => PolicyV1
  /** Filled as `collect` plans the episodes: trajectory id → the opponent's policy id and seat. */
  seating: LeagueSeating
  /** Frees the snapshot models this step made (after its rollout). */
  release(): void
}

/**
 * The league (AlphaStar's, fictitious self-play): the learner plays its seats against opponents drawn per game from
 * the trainer's `opponents` — scripted players and a pool of its own past snapshots (`SnapshotPool`) — each in its
 * share of the episodes, one seat drawn per episode as today's fixed opponents are (`withOpponents`). A snapshot is the
 * learner's trainable parameters as float32 values, held in memory (within `maxBytes`) and, with a run directory,
 * written to `<runDirectory>/league/snapshot-<step>.safetensors` so that a resumed run restores the pool. A step's drawn
 * snapshots play through models of their own (a copy of the learner's frozen parameters with the snapshot's values:
 * nothing mutable shared), freed after the step's rollout. The games against opponents feed PFSP's win rates and the
 * pool's Bradley–Terry ratings.
 */
export class League {
  readonly pool: SnapshotPool
  readonly ratings: PoolRatings
  private readonly config: ParsedSnapshotPoolConfig
  private readonly values = new Map<number, SnapshotValues>()
  private readonly files: SnapshotFiles | undefined
  /** The pools named by the checkpoints kept (oldest first, at most `keepLast`): their files stay. */
  private retained: number[][] = []
  /** Steps whose values must be read from disk before the next rollout (after a restore). */
  private pendingRead = false
  private stepGames = 0
  /** The members and their sampling weights of the step being played, fixed at its `prepare` (its greedy baselines draw as its episodes did). */
  private stepDraw: { stepIndex: number; steps: number[]; weights: number[] } | undefined

  constructor(private readonly options: LeagueOptions) {
    const poolIndex = options.opponents.findIndex(isPoolConfig)
    if (poolIndex < 0) throw new InvalidArgumentError({ argument: 'config.opponents', value: options.opponents, message: 'has no snapshot pool' })
    this.config = options.opponents[poolIndex] as ParsedSnapshotPoolConfig
    checkLeagueModel(options.model, this.config, `config.opponents.${poolIndex}`)
    this.pool = new SnapshotPool(this.config)
    this.ratings = new PoolRatings(this.config.ratingWindow, options.learnerId)
    this.files = options.runDirectory === undefined ? undefined : nodePlatform('config.runDirectory', options.runDirectory).snapshotFiles(options.runDirectory)
  }

  /**
   * Before step `stepIndex`'s rollout: reads a restored pool's snapshots back, takes the snapshot that is due (the
   * learner's weights now, before this step's update) and drops the oldest beyond `keep`, then deletes the files no
   * kept checkpoint needs.
   */
  async prepare(stepIndex: number): Promise<void> {
    if (this.pendingRead) {
      for (const member of this.pool.all) {
        if (!this.values.has(member.step)) this.values.set(member.step, await this.files!.read(member.step))
      }
      this.pendingRead = false
    }
    if (this.pool.isDue(stepIndex)) {
      const values = await snapshotValues(this.options.model)
      this.values.set(stepIndex, values)
      await this.files?.write(stepIndex, values)
      for (const dropped of this.pool.add(stepIndex)) this.values.delete(dropped)
    }
    this.sweepFiles()
    if (this.stepDraw?.stepIndex !== stepIndex) this.stepDraw = { stepIndex, steps: this.pool.all.map((member) => member.step), weights: this.pool.weights() }
  }

  /** The seats of step `stepIndex`: `self` everywhere but an opponent's seat in its share of the episodes. */
  step(self: PolicyV1, stepIndex: number, runId: string): LeagueStep {
    const models = new Map<number, { model: CausalLanguageModel; policy: PolicyV1 }>()
    const snapshotPolicy = (step: number): PolicyV1 => {
      let made = models.get(step)
      if (made === undefined) {
        const model = this.snapshotModelOf(step)
        const policy = createLocalPolicy({
          model,
          tokenizer: this.options.tokenizer,
          maxBatch: this.options.maxGenerationBatch,
          seed: deriveSeed('ludic.league.policy', this.options.seed, stepIndex, step),
          id: snapshotPolicyId(step),
          ...(this.options.chatTemplate === undefined ? {} : { chatTemplate: this.options.chatTemplate }),
        })
        made = { model, policy }
        models.set(step, made)
      }
      return made.policy
    }
    const draw = this.stepDraw
    if (draw?.stepIndex !== stepIndex)
      throw new InvalidArgumentError({
        argument: 'stepIndex',
        value: stepIndex,
        message: 'is not the step the league was prepared for (prepare(stepIndex) first)',
      })
    const opponents: Opponent[] = this.options.opponents.map((opponent) =>
      isPoolConfig(opponent) ? { share: opponent.share, policy: (random) => snapshotPolicy(draw.steps[random.sampleIndex(draw.weights)]!) } : opponent,
    )
    const seats = seatPolicies(self, { opponents, seed: this.options.seed, stepIndex })
    const seating: LeagueSeating = new Map()
    const policies = (context: PolicyContext): PolicyV1 => {
      const policy = typeof seats === 'function' ? seats(context) : seats
      if (policy !== self) seating.set(`${runId}/${context.environmentId}/${context.seed}/${context.groupIndex}`, { opponent: policy.id, seat: context.role })
      return policy
    }
    return {
      policies,
      seating,
      release() {
        for (const { model } of models.values()) model.dispose()
        models.clear()
      },
    }
  }

  /** Records the step's games against opponents (the learner's score by return: 1 more, ½ equal, 0 less than the opponent's). */
  record(seating: LeagueSeating, trajectories: readonly Trajectory[]): void {
    this.stepGames = 0
    for (const trajectory of trajectories) {
      const seated = seating.get(trajectory.id)
      if (seated === undefined || trajectory.error !== undefined) continue
      const { opponent, seat } = seated
      const score = learnerScore(trajectory, seat)
      this.stepGames++
      this.ratings.record({ opponent, score })
      const match = /^snapshot-(\d+)$/.exec(opponent)
      if (match !== null) this.pool.record(Number(match[1]), score)
    }
  }

  /**
   * The step's league figures: `league/members`, `league/games` (this step's games against opponents),
   * `league/rating/<player>` (Bradley–Terry, Elo scale, mean 1000, over the last `ratingWindow` games) and
   * `league/winRate/snapshot-<step>` (the learner's smoothed win rate against each member, PFSP's x).
   */
  metrics(): Record<string, number> {
    const metrics: Record<string, number> = { 'league/members': this.pool.all.length, 'league/games': this.stepGames }
    for (const [player, rating] of Object.entries(this.ratings.ratings())) metrics[`league/rating/${player}`] = rating
    for (const member of this.pool.all) metrics[`league/winRate/${snapshotPolicyId(member.step)}`] = this.pool.winRate(member.step)
    return metrics
  }

  /**
   * The league's state for a checkpoint (the snapshots' values are in their files). The files that neither the pool
   * nor the `keepLast` checkpoints ending with this one name are deleted.
   */
  getState(): JsonValue {
    const members = this.pool.all.map((member) => member.step)
    this.retained = [...this.retained, members].slice(-this.options.keepLast)
    this.sweepFiles()
    return { pool: this.pool.getState() as unknown as JsonValue, games: this.ratings.getState() as unknown as JsonValue, retained: this.retained }
  }

  /** Restores a checkpoint's state; the snapshots' values are read from their files before the next rollout (`prepare`). */
  setState(state: JsonValue | undefined): void {
    // A checkpoint written without a league (the config gained one): the pool starts at the resumed step.
    if (state === undefined) return
    const parsed = parseArgument(leagueStateSchema, state, 'state.league')
    this.pool.setState(parsed.pool as SnapshotPoolState)
    if (this.files === undefined && this.pool.all.length > 0)
      throw new LudicError('a checkpoint with a league pool is restored without a run directory to read its snapshots from')
    this.ratings.setState(parsed.games)
    this.retained = parsed.retained.slice(-this.options.keepLast)
    this.values.clear()
    this.pendingRead = true
    this.stepDraw = undefined
  }

  dispose(): void {
    this.values.clear()
  }

  /** A model of the snapshot of `step` (a member's): the caller frees it. */
  snapshotModelOf(step: number): CausalLanguageModel {
    const values = this.values.get(step)
    if (values === undefined) throw new InvalidArgumentError({ argument: 'step', value: step, message: 'is no snapshot the league holds' })
    return snapshotModel(this.options.model, values)
  }

  /** Deletes the snapshot files that neither the pool nor a kept checkpoint names. */
  private sweepFiles(): void {
    if (this.files === undefined) return
    const needed = new Set([...this.pool.all.map((member) => member.step), ...this.retained.flat()])
    for (const step of this.files.steps()) if (!needed.has(step)) this.files.remove(step)
  }
}

const leagueStateSchema = z.strictObject({
  pool: z.unknown(),
  games: z.unknown(),
  retained: z.array(z.array(z.number().int().min(0))),
})

export function isPoolConfig(opponent: FixedOpponent | ParsedSnapshotPoolConfig): opponent is ParsedSnapshotPoolConfig {
  return (opponent as ParsedSnapshotPoolConfig).pool === 'snapshots'
}

/**
 * Refuses a learner the pool cannot snapshot: one with adapters on its linear layers that `attachLora` did not attach
 * (its snapshot model could not rebuild them), or one whose `keep` snapshots exceed `maxBytes`.
 */
export function checkLeagueModel(model: CausalLanguageModel, config: ParsedSnapshotPoolConfig, argument: string): void {
  const lora = attachedLoraAdapters(model).reduce((total, { adapters }) => total + adapters.layers.length, 0)
  if (model.linearAdapters().size !== lora)
    throw new InvalidArgumentError({
      argument,
      value: config,
      message: `the model has ${model.linearAdapters().size - lora} linear adapters that are not LoRA adapters of applyLora or attachLoraAdapter: a snapshot could not rebuild them`,
    })
  let elements = 0
  for (const variable of model.trainableParameters().values()) elements += variable.size
  const bytes = 4 * elements * config.keep
  if (bytes > config.maxBytes)
    throw new InvalidArgumentError({
      argument: `${argument}.maxBytes`,
      value: config.maxBytes,
      message: `is less than keep (${config.keep}) snapshots of the model's ${elements} trainable parameters take as float32 (${(bytes / 1024 ** 2).toFixed(1)} MiB): lower keep or raise maxBytes`,
    })
}

/** The learner's trainable parameters now, as float32 copies. */
async function snapshotValues(model: CausalLanguageModel): Promise<SnapshotValues> {
  const values = new Map<string, { shape: readonly number[]; data: Float32Array }>()
  for (const [name, variable] of model.trainableParameters()) values.set(name, { shape: [...variable.shape], data: Float32Array.from(await variable.data()) })
  return values
}

/**
 * A model of the learner's parameters with a snapshot's values in place of its trainable ones, every variable its own
 * copy. A learner that trains LoRA adapters has its base copied and the same adapters attached with the snapshot's
 * values (`attachLora` with the learner's plans); merged adapters are refused (their base weights hold B·A).
 */
function snapshotModel(learner: CausalLanguageModel, values: SnapshotValues): CausalLanguageModel {
  const loras = attachedLoraAdapters(learner)
  if (loras.some(({ adapters }) => adapters.merged))
    throw new LudicError("the learner's LoRA adapters are merged into its weights: a snapshot's model needs them apart (unmerge before training)")
  const adapterNames = new Set(loras.flatMap(({ adapters }) => [...adapters.parameters().keys()]))
  const made: tf.Tensor[] = []
  let model: CausalLanguageModel | undefined
  try {
    const weights = new Map<string, tf.Tensor>()
    for (const [name, variable] of learner.parameters()) {
      if (adapterNames.has(name)) continue // attached below, as adapters
      const value = values.get(name)
      if (value === undefined) weights.set(name, variable)
      else {
        const tensor = tf.tensor(value.data, [...value.shape], 'float32')
        made.push(tensor)
        weights.set(name, tensor)
      }
    }
    model = new CausalLanguageModel(learner.config, weights, { maxContextTokens: learner.maxContextTokens })
    for (const { plan } of loras) attachLora(model, plan, new Map([...values].map(([name, value]) => [name, value.data])))
    return model
  } catch (error) {
    model?.dispose()
    throw error
  } finally {
    tf.dispose(made)
  }
}

/** The learner's score in a game where `seat` was the opponent's: its mean return over the other roles against the seat's. */
function learnerScore(trajectory: Trajectory, seat: string): number {
  const others = trajectory.roles.filter((role) => role !== seat)
  const learnerReturn = others.reduce((total, role) => total + (trajectory.returns[role] ?? 0), 0) / Math.max(others.length, 1)
  const opponentReturn = trajectory.returns[seat] ?? 0
  return learnerReturn > opponentReturn ? 1 : learnerReturn < opponentReturn ? 0 : 0.5
}
