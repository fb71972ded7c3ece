import { createRandom, deriveSeed, type GroupJudgement, type Trajectory, type TokenizerV1 } from '@ludic/core'
import type { Experience } from './experience/experience.js'
import { learnerPolicyId } from './rl-config.js'
import { trajectoryFormat, type TrajectoryJudgementRecord, type TrajectoryRecord, type TrajectoryTurnRecord } from './trajectory-log.js'

/**
 * The indices (ascending) of the episodes of a step that are written: `episodesPerStep` of `count` drawn without
 * replacement by a generator seeded with the run's seed and the step, or all of them.
 */
export function sampledEpisodes(count: number, episodesPerStep: number | 'all', seed: number, step: number): number[] {
  const all = Array.from({ length: count }, (_, index) => index)
  if (episodesPerStep === 'all' || episodesPerStep >= count) return all
  return createRandom(deriveSeed('ludic.trajectories', seed, step))
    .shuffle(all)
    .slice(0, episodesPerStep)
    .sort((first, second) => first - second)
}

/** A per-token column as JSON numbers (`null` where not finite). */
const tokenValues = (values: ArrayLike<number>): (number | null)[] => Array.from(values, (value) => (Number.isFinite(value) ? value : null))

/** Each token decoded alone (special tokens kept): the pieces the view colours. */
const tokenPieces = (tokenizer: TokenizerV1, ids: ArrayLike<number>): string[] => Array.from(ids, (id) => tokenizer.decode([id]))

/** What `rlTrajectoryRecords` reads of an RL step. */
export interface RlTrajectoryInput {
  /** The 1-based step that trains on them. */
  step: number
  trainer: string
  /** The step's experience after the advantage stage (its trajectories: the policy's, then any external ones). */
  experience: Experience
  /** Ids of the external (RL-PLUS demonstration) trajectories. */
  externalIds: ReadonlySet<string>
  /** The weights version that played the step's own episodes. */
  policyVersion: number
  tokenizer: TokenizerV1
  /** The indices into `experience.trajectories` to write. */
  episodes: readonly number[]
  /** A scorer's view (CPO): each trajectory's score by id, and the groups' judgements when the scorer gives them. */
  scoring?: { scorer: string; scores: ReadonlyMap<string, number>; judgements: readonly GroupJudgement[] } | undefined
  /** Per-token entropies of trained samples, by index into `experience.samples` (`trainedSamplesOf`), when computed. */
  entropies?: ReadonlyMap<number, Float32Array> | undefined
}

/** The indices into `experience.samples` of the trained turns of the given episodes (whose entropies a record can show). */
export function trainedSamplesOf(experience: Experience, episodes: readonly number[]): number[] {
  const ids = new Set(episodes.map((index) => experience.trajectories[index]!.id))
  return experience.samples.flatMap((sample, index) => (ids.has(sample.trajectoryId) ? [index] : []))
}

/**
 * The records of an RL step's sampled episodes: each turn's prompt (the tokens the model read, decoded with special
 * tokens) and response, its response token ids and pieces, its log-probs (the rollout's; for an external
 * demonstration, which no policy of this run sampled, π_old of the step's weights), the weights version of each
 * token where the policy said (`policyVersions`) and, for trained turns, the per-token advantages the update uses. The learner's untrained turns (roles outside `trainRoles`) keep their
 * completion's tokens; other policies' turns (opponents, fixed roles) their response text only, their ids being
 * perhaps of another tokenizer.
 */
export function rlTrajectoryRecords(input: RlTrajectoryInput): TrajectoryRecord[] {
  const { experience, tokenizer } = input
  const sampleOf = new Map<string, number>()
  experience.samples.forEach((sample, index) => sampleOf.set(`${sample.trajectoryId}\u0000${sample.turnIndex}`, index))
  const { offsets, columns } = experience
  const row = (column: Float32Array | undefined, sample: number) => column?.subarray(offsets[sample]!, offsets[sample + 1]!)
  return input.episodes.map((episodeIndex) => {
    const trajectory = experience.trajectories[episodeIndex]!
    const external = input.externalIds.has(trajectory.id)
    const turns = trajectory.turns.map((turn): TrajectoryTurnRecord => {
      const base: TrajectoryTurnRecord = {
        index: turn.index,
        role: turn.role,
        observation: turn.observation,
        ...(turn.legalActions === undefined ? {} : { legalActions: [...turn.legalActions] }),
        action: turn.action,
        rewards: { ...turn.rewards },
        invalidAction: turn.invalidAction,
        ...(turn.policyId === undefined ? {} : { policyId: turn.policyId }),
        trained: false,
      }
      const sample = sampleOf.get(`${trajectory.id}\u0000${turn.index}`)
      if (sample !== undefined) {
        const { promptTokenIds, responseTokenIds, tokenPolicyVersions } = experience.samples[sample]!
        const logprobs = row(external ? columns.oldLogprobs : columns.rolloutLogprobs, sample)
        const advantages = row(columns.advantages, sample)
        const entropy = input.entropies?.get(sample)
        return {
          ...base,
          trained: true,
          prompt: tokenizer.decode(promptTokenIds),
          response: turn.completion?.text ?? tokenizer.decode(responseTokenIds),
          tokens: tokenPieces(tokenizer, responseTokenIds),
          tokenIds: Array.from(responseTokenIds),
          ...(logprobs === undefined ? {} : { logprobs: tokenValues(logprobs) }),
          ...(advantages === undefined ? {} : { advantages: tokenValues(advantages) }),
          ...(entropy === undefined ? {} : { entropy: tokenValues(entropy) }),
          ...(tokenPolicyVersions === undefined ? {} : { policyVersions: Array.from(tokenPolicyVersions) }),
        }
      }
      const completion = turn.completion
      if (completion === undefined) return base
      // Another policy's ids may be of another tokenizer: its text only.
      if (turn.policyId !== learnerPolicyId) return { ...base, response: completion.text }
      return {
        ...base,
        prompt: tokenizer.decode(completion.promptTokenIds),
        response: completion.text,
        tokens: tokenPieces(tokenizer, completion.tokenIds),
        tokenIds: Array.from(completion.tokenIds),
        logprobs: tokenValues(completion.logprobs),
        ...(completion.tokenPolicyVersions === undefined ? {} : { policyVersions: Array.from(completion.tokenPolicyVersions) }),
      }
    })
    const judgement = input.scoring === undefined ? undefined : judgementOf(input.scoring, trajectory)
    const record: TrajectoryRecord = {
      format: trajectoryFormat,
      step: input.step,
      ...(external ? {} : { policyVersion: input.policyVersion }),
      trainer: input.trainer,
      episode: {
        id: trajectory.id,
        environmentId: trajectory.environmentId,
        seed: trajectory.seed,
        groupId: trajectory.groupId,
        roles: [...trajectory.roles],
        returns: { ...trajectory.returns },
        done: trajectory.done,
        truncated: trajectory.truncated,
        ...(trajectory.error === undefined ? {} : { error: trajectory.error }),
        external,
      },
      turns,
      ...(trajectory.turns.length === 0 ? {} : { render: trajectory.turns.at(-1)!.observation }),
      ...(judgement === undefined ? {} : { judgement }),
    }
    return record
  })
}

/** The scorer's view of `trajectory`'s group: its score, and the judge's ranking and texts where it gave a judgement. */
function judgementOf(scoring: NonNullable<RlTrajectoryInput['scoring']>, trajectory: Trajectory): TrajectoryJudgementRecord | undefined {
  const score = scoring.scores.get(trajectory.id)
  if (score === undefined) return undefined
  // The latest of the group's (a judge used before the trainer may still hold an older judgement of the same ids).
  const judgement = scoring.judgements.findLast((candidate) => candidate.groupId === trajectory.groupId && candidate.candidates.includes(trajectory.id))
  if (judgement === undefined) return { scorer: scoring.scorer, score, groupScores: [], rawText: [] }
  const position = judgement.candidates.indexOf(trajectory.id)
  return {
    scorer: scoring.scorer,
    score,
    rank: judgement.ranking[position]!,
    groupEpisodeIds: [...judgement.candidates],
    groupScores: [...judgement.scores],
    groupRanking: [...judgement.ranking],
    rawText: [...(judgement.raw ?? [])],
    ...(judgement.failures === undefined || judgement.failures.length === 0 ? {} : { failures: [...judgement.failures] }),
    ...(judgement.agreement === undefined ? {} : { agreement: judgement.agreement }),
  }
}

/** A text field of a record that may be cut: its name in `truncatedFields`, its whole text, and where it goes. */
interface TextField {
  name: string
  text: string
  set(record: TrajectoryRecord, text: string): void
}

/** The UTF-8 bytes of `text` (a lone surrogate as U+FFFD, 3 bytes, as an encoder writes it), counted without encoding it. */
function byteLength(text: string): number {
  let bytes = 0
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff && (text.charCodeAt(index + 1) & 0xfc00) === 0xdc00) {
      bytes += 4 // a surrogate pair: one code point above U+FFFF
      index++
    } else bytes += 3
  }
  return bytes
}

/** `text` cut to `length` UTF-16 units (a surrogate pair kept whole) and marked with `…`; unchanged when not longer. */
function cut(text: string, length: number): string {
  if (text.length <= length) return text
  let end = length
  const last = text.charCodeAt(end - 1)
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end--
  return `${text.slice(0, end)}…`
}

/** The record's long texts: prompts, observations, responses, actions, the render, the judge's answers, the error. */
function textFields(record: TrajectoryRecord): TextField[] {
  const fields: TextField[] = []
  record.turns.forEach((turn, index) => {
    for (const key of ['prompt', 'observation', 'response', 'action'] as const) {
      const text = turn[key]
      if (text !== undefined) fields.push({ name: `turns[${index}].${key}`, text, set: (target, value) => (target.turns[index]![key] = value) })
    }
  })
  if (record.render !== undefined) fields.push({ name: 'render', text: record.render, set: (target, value) => (target.render = value) })
  record.judgement?.rawText.forEach((text, index) =>
    fields.push({ name: `judgement.rawText[${index}]`, text, set: (target, value) => (target.judgement!.rawText[index] = value) }),
  )
  const error = record.episode.error
  if (error !== undefined) fields.push({ name: 'episode.error', text: error, set: (target, value) => (target.episode.error = value) })
  return fields
}

/** The per-token arrays of a turn, dropped together when a line is too long (named `turns[i].tokens`), and its legal actions. */
const tokenArrayKeys = ['tokens', 'tokenIds', 'logprobs', 'advantages', 'entropy', 'policyVersions'] as const

/** The largest integer in [low, high] for which `holds` (monotone: true up to some point), or undefined when `holds(low)` is false. */
function largestHolding(low: number, high: number, holds: (value: number) => boolean): number | undefined {
  if (!holds(low)) return undefined
  let [good, bad] = [low, high + 1]
  while (bad - good > 1) {
    const middle = Math.floor((good + bad) / 2)
    if (holds(middle)) good = middle
    else bad = middle
  }
  return good
}

/**
 * `record` as one JSON line of at most `maxLineBytes` bytes (UTF-8): when it is longer, its texts are cut to the
 * longest length that fits (at least 256 characters each), else the per-token arrays and legal actions of its last
 * turns are dropped as well, else its texts are cut further, else its last turns are dropped; each cut is named in
 * `truncatedFields` (`turns[i].prompt`, `turns[i].tokens` for the per-token arrays, `turns[i].legalActions`,
 * `turns[k:]` for the turns dropped). Undefined when even the bare episode does not fit (ids and roles longer than the limit).
 */
export function boundedTrajectoryLine(record: TrajectoryRecord, maxLineBytes: number): string | undefined {
  const whole = JSON.stringify(record)
  if (byteLength(whole) <= maxLineBytes) return whole
  const fields = textFields(record)
  const longest = fields.reduce((top, field) => Math.max(top, field.text.length), 0)
  const turnCount = record.turns.length
  /** Texts cut to `cap`, the turns from `bareFrom` on without their arrays, only the first `kept` turns. */
  const build = (cap: number, bareFrom: number, kept: number): string => {
    const truncatedFields = [...(record.truncatedFields ?? [])]
    const turns = record.turns.slice(0, kept).map((turn, index) => {
      if (index < bareFrom) return { ...turn }
      const bare = { ...turn }
      if (tokenArrayKeys.some((key) => bare[key] !== undefined)) truncatedFields.push(`turns[${index}].tokens`)
      for (const key of tokenArrayKeys) delete bare[key]
      if (bare.legalActions !== undefined) truncatedFields.push(`turns[${index}].legalActions`)
      delete bare.legalActions
      return bare
    })
    const copy: TrajectoryRecord = {
      ...record,
      episode: { ...record.episode },
      turns,
      ...(record.judgement === undefined ? {} : { judgement: { ...record.judgement, rawText: [...record.judgement.rawText] } }),
    }
    for (const field of fields) {
      if (field.text.length <= cap) continue
      const turn = /^turns\[(\d+)\]/.exec(field.name)
      if (turn !== null && Number(turn[1]) >= kept) continue
      field.set(copy, cut(field.text, cap))
      truncatedFields.push(field.name)
    }
    if (kept < turnCount) truncatedFields.push(`turns[${kept}:]`)
    copy.truncatedFields = truncatedFields
    return JSON.stringify(copy)
  }
  const fits = (cap: number, bareFrom: number, kept: number) => byteLength(build(cap, bareFrom, kept)) <= maxLineBytes
  const floor = Math.min(256, longest)
  // 1. Texts cut, no shorter than the floor.
  const cap = largestHolding(floor, longest, (value) => fits(value, turnCount, turnCount))
  if (cap !== undefined) return build(cap, turnCount, turnCount)
  // 2. The last turns' arrays dropped (as few as will do), texts as long as then fit.
  const bareFrom = largestHolding(0, turnCount, (value) => fits(floor, value, turnCount))
  if (bareFrom !== undefined) return build(largestHolding(floor, longest, (value) => fits(value, bareFrom, turnCount))!, bareFrom, turnCount)
  // 3. No arrays; texts shorter than the floor; then the last turns dropped.
  const kept = largestHolding(0, turnCount, (value) => fits(0, 0, value))
  if (kept === undefined) return undefined
  return build(largestHolding(0, longest, (value) => fits(value, 0, kept))!, 0, kept)
}
