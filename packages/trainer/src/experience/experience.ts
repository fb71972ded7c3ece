import { InvalidArgumentError, type AdvantageBatch, type Sample, type Trajectory } from '@ludic/core'

/** The per-token columns an experience can carry; each stage of the RL step adds some. */
export type TokenColumn =
  /** log π_rollout of each response token, as the rollout recorded it (always present). */
  | 'rolloutLogprobs'
  /** log π_old: the weights that played, recomputed by a full forward pass, or the rollout's. */
  | 'oldLogprobs'
  /** log π_ref of the KL term's frozen reference. */
  | 'referenceLogprobs'
  /** The critic's V(s_t) before each token. */
  | 'values'
  /** The reward of each token (outcome rewards on the last token of a role's last turn). */
  | 'tokenRewards'
  | 'advantages'
  /** The estimator's returns (the critic's targets). */
  | 'returns'
  /** Truncated importance weights min(π_current / π_rollout, cap) of an off-policy batch. */
  | 'importanceWeights'

/** Where a batch came from: played by the current weights, or by older ones (asynchronous or remote rollouts). */
export interface ExperienceOrigin {
  /** Played by weights older than the current ones: the update corrects with importance weights. */
  offPolicy: boolean
  /** The weights version (trainer step) that played it, for an off-policy batch. */
  policyVersion?: number
}

/**
 * One step's experience, the batch every stage of the RL step reads and extends (verl's `DataProto`): the trained
 * samples (turns with a response) with integer ids for their group, episode, role, environment and turn (indices into
 * the name tables: nothing is joined by string keys), and ragged per-token columns laid end to end, sample `i`'s
 * tokens at `[offsets[i], offsets[i + 1])`. Stages return a new experience with more columns (`withColumns`);
 * `samples` and `advantageBatch` are the views older code and estimators read.
 */
export interface Experience {
  readonly samples: readonly Sample[]
  readonly trajectories: readonly Trajectory[]
  /** Samples. */
  readonly size: number
  /** `size + 1` token offsets. */
  readonly offsets: Int32Array
  /** Per sample, indices into `names`. */
  readonly ids: {
    readonly group: Int32Array
    readonly episode: Int32Array
    readonly role: Int32Array
    readonly environment: Int32Array
    /** The turn's index in its episode. */
    readonly turn: Int32Array
  }
  readonly names: {
    readonly groups: readonly string[]
    readonly episodes: readonly string[]
    readonly roles: readonly string[]
    readonly environments: readonly string[]
  }
  /** Per sample, the return of its role in its episode (a scorer's score included). */
  readonly outcome: Float32Array
  /** Per sample, 1 for an external (demonstration) sample, 0 for the policy's own. */
  readonly external: Uint8Array
  readonly columns: Readonly<Partial<Record<TokenColumn, Float32Array>>>
  /** Per sample, the reward of its group's greedy episode for its role (ReMax's baseline), when played. */
  readonly baselineRewards?: Float32Array
  readonly origin: ExperienceOrigin
}

/** Interns strings as small integers, in order of first appearance. */
function interner() {
  const index = new Map<string, number>()
  const names: string[] = []
  return {
    id(name: string): number {
      let id = index.get(name)
      if (id === undefined) {
        id = names.length
        index.set(name, id)
        names.push(name)
      }
      return id
    },
    names,
  }
}

/**
 * The experience of a rollout: `samples` (the trained turns, the policy's then any external ones, `external` marking
 * how many at the end are) with their trajectories. Each role's return sits as its reward on the last response token of
 * its last turn in the episode (outcome rewards); every other token gets 0.
 */
export function buildExperience(
  trajectories: readonly Trajectory[],
  samples: readonly Sample[],
  options: { origin: ExperienceOrigin; externalCount?: number },
): Experience {
  const size = samples.length
  const externalCount = options.externalCount ?? 0
  if (!Number.isInteger(externalCount) || externalCount < 0 || externalCount > size)
    throw new InvalidArgumentError({ argument: 'options.externalCount', value: externalCount, message: `must be an integer in [0, ${size}]` })
  const groups = interner()
  const episodes = interner()
  const roles = interner()
  const environments = interner()
  const ids = {
    group: new Int32Array(size),
    episode: new Int32Array(size),
    role: new Int32Array(size),
    environment: new Int32Array(size),
    turn: new Int32Array(size),
  }
  const offsets = new Int32Array(size + 1)
  samples.forEach((sample, index) => {
    ids.group[index] = groups.id(sample.groupId)
    ids.episode[index] = episodes.id(sample.trajectoryId)
    ids.role[index] = roles.id(sample.role)
    ids.environment[index] = environments.id(sample.environmentId)
    ids.turn[index] = sample.turnIndex
    offsets[index + 1] = offsets[index]! + sample.responseTokenIds.length
  })
  const returns = new Map(trajectories.map((trajectory) => [trajectory.id, trajectory.returns]))
  const outcome = Float32Array.from(samples, (sample) => returns.get(sample.trajectoryId)?.[sample.role] ?? 0)
  // The last turn of each (episode, role): its last token carries the role's return.
  const lastTurn = new Map<number, number>() // episode * roles + role → sample index
  const key = (index: number) => ids.episode[index]! * (roles.names.length + 1) + ids.role[index]!
  samples.forEach((sample, index) => {
    const last = lastTurn.get(key(index))
    if (last === undefined || samples[last]!.turnIndex < sample.turnIndex) lastTurn.set(key(index), index)
  })
  const total = offsets[size]!
  const rolloutLogprobs = new Float32Array(total)
  const tokenRewards = new Float32Array(total)
  samples.forEach((sample, index) => {
    rolloutLogprobs.set(sample.rolloutLogprobs, offsets[index]!)
    if (lastTurn.get(key(index)) === index && offsets[index + 1]! > offsets[index]!) tokenRewards[offsets[index + 1]! - 1] = outcome[index]!
  })
  const external = new Uint8Array(size)
  external.fill(1, size - externalCount)
  return {
    samples,
    trajectories,
    size,
    offsets,
    ids,
    names: { groups: groups.names, episodes: episodes.names, roles: roles.names, environments: environments.names },
    outcome,
    external,
    columns: { rolloutLogprobs, tokenRewards },
    origin: options.origin,
  }
}

/** `experience` with `columns` added (or replaced): each laid out by `experience.offsets`, rows given or flat. */
export function withColumns(
  experience: Experience,
  columns: Partial<Record<TokenColumn, Float32Array | readonly ArrayLike<number>[]>>,
  extra: Pick<Partial<Experience>, 'baselineRewards'> = {},
): Experience {
  const added: Partial<Record<TokenColumn, Float32Array>> = {}
  for (const [name, value] of Object.entries(columns) as [TokenColumn, Float32Array | readonly ArrayLike<number>[]][]) {
    added[name] = value instanceof Float32Array ? checkedFlat(experience, name, value) : flatten(experience, name, value)
  }
  return { ...experience, ...extra, columns: { ...experience.columns, ...added } }
}

function checkedFlat(experience: Experience, name: string, value: Float32Array): Float32Array {
  const total = experience.offsets[experience.size]!
  if (value.length !== total) throw new InvalidArgumentError({ argument: name, value: value.length, message: `has ${value.length} tokens for ${total}` })
  return value
}

function flatten(experience: Experience, name: string, rows: readonly ArrayLike<number>[]): Float32Array {
  if (rows.length !== experience.size)
    throw new InvalidArgumentError({ argument: name, value: rows.length, message: `has ${rows.length} rows for ${experience.size} samples` })
  const flat = new Float32Array(experience.offsets[experience.size]!)
  rows.forEach((row, index) => {
    const length = experience.offsets[index + 1]! - experience.offsets[index]!
    if (row.length !== length)
      throw new InvalidArgumentError({ argument: `${name}[${index}]`, value: row.length, message: `has ${row.length} tokens for ${length}` })
    flat.set(row, experience.offsets[index]!)
  })
  return flat
}

/** A column as one row per sample: views of the flat column, no copy. */
export function rowsOf(experience: Experience, name: TokenColumn): Float32Array[] {
  const column = experience.columns[name]
  if (column === undefined) throw new InvalidArgumentError({ argument: 'name', value: name, message: 'is not a column of this experience yet' })
  return Array.from({ length: experience.size }, (_, index) => column.subarray(experience.offsets[index]!, experience.offsets[index + 1]!))
}

/** The rows of a column, or undefined when the experience lacks it. */
export function rowsIfAny(experience: Experience, name: TokenColumn): Float32Array[] | undefined {
  return experience.columns[name] === undefined ? undefined : rowsOf(experience, name)
}

/**
 * Per sample, who its role played against: the ids of the policies seated in its episode's other roles
 * (`Trajectory.policyIds`; else those that acted, `Turn.policyId`), distinct, sorted, joined by '+'; '' when none is
 * known (an external sample's episode, a one-role game).
 */
function opponentIdsOf(experience: Experience): string[] {
  const trajectories = new Map(experience.trajectories.map((trajectory) => [trajectory.id, trajectory]))
  const memo = new Map<string, string>()
  return experience.samples.map((sample) => {
    const key = JSON.stringify([sample.trajectoryId, sample.role])
    let opponents = memo.get(key)
    if (opponents === undefined) {
      const trajectory = trajectories.get(sample.trajectoryId)
      const seated = trajectory?.policyIds === undefined ? undefined : Object.entries(trajectory.policyIds)
      const played = seated ?? (trajectory?.turns ?? []).flatMap((turn) => (turn.policyId === undefined ? [] : [[turn.role, turn.policyId] as const]))
      const ids = new Set(played.flatMap(([role, policyId]) => (role === sample.role ? [] : [policyId])))
      opponents = [...ids].sort().join('+')
      memo.set(key, opponents)
    }
    return opponents
  })
}

/**
 * The estimators' view (`AdvantageBatch`): token rewards, groups, roles, environments, opponents, episodes and turns,
 * and what stages added (`values`, `baselineRewards`, state keys from the samples).
 */
export function advantageBatchOf(experience: Experience): AdvantageBatch {
  const { names, ids } = experience
  const pick = (table: readonly string[], column: Int32Array) => Array.from(column, (id) => table[id]!)
  const stateKeys = experience.samples.every((sample) => sample.stateKey !== undefined) ? experience.samples.map((sample) => sample.stateKey!) : undefined
  return {
    tokenRewards: rowsOf(experience, 'tokenRewards'),
    groupIds: pick(names.groups, ids.group),
    roles: pick(names.roles, ids.role),
    environmentIds: pick(names.environments, ids.environment),
    opponentIds: opponentIdsOf(experience),
    trajectoryIds: pick(names.episodes, ids.episode),
    turnIndices: Array.from(ids.turn),
    ...(experience.columns.values === undefined ? {} : { values: rowsOf(experience, 'values') }),
    ...(experience.baselineRewards === undefined ? {} : { baselineRewards: Array.from(experience.baselineRewards) }),
    ...(stateKeys === undefined ? {} : { stateKeys }),
  }
}
