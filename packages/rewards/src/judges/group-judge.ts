import {
  createRandom,
  deriveSeed,
  isPolicy,
  parseArgument,
  parseInput,
  trajectorySchema,
  type GroupJudgement,
  type JudgeIdentity,
  type Trajectory,
  type TrajectoryScorerV1,
} from '@ludic/core'
import { z } from 'zod'
import { candidateLabels, parseRanking } from './answer-parsing.js'
import { askFunction, askPolicy, type JudgeAnswer } from './judge-call.js'
import { commonJudgeOptions, judgeModelName, judgeSchema } from './judge-options.js'
import { groupRankingTemplate, type GroupRankingTemplate } from './prompt-templates.js'
import { pairwiseAgreement, ranksFromScores, ranksFromTiers, scoresFromRanks, spearmanCorrelation } from './ranks.js'
import { scoredRole, trajectoryView } from './trajectory-view.js'
import { truncateText } from './truncate-text.js'

/**
 * A rule judge for a group: one score per candidate (in the order given), higher better, equal scores tie
 * (e.g. a rubric's score, a verifier's 0/1). It sees the shuffled candidates, like a language-model judge.
 */
export type RankingFunction = (
  context: string,
  candidates: readonly string[],
  options: { signal: AbortSignal },
) => readonly number[] | Promise<readonly number[]>

export const groupJudgeOptionsSchema = z.strictObject({
  /** A `PolicyV1` asked with `template` (a local model, or a remote one through `createOpenAICompatiblePolicy`), or a `RankingFunction`. */
  judge: judgeSchema<RankingFunction>('ranking function (context, candidates) => scores'),
  /** The scorer's name (`TrajectoryScorerV1.name`). Default: 'group-judge'. */
  name: z.string().min(1).default('group-judge'),
  /** The prompt of a language-model judge. Default: `groupRankingTemplate` (`ludic-group-rank-v1`). */
  template: z
    .custom<GroupRankingTemplate>((value) => typeof (value as GroupRankingTemplate)?.render === 'function', 'must be a template { version, render }')
    .default(groupRankingTemplate),
  /**
   * Times each group is judged, each time shown in another order: shuffle 2k is a seeded random permutation,
   * shuffle 2k + 1 its reverse, so a judge that ranks by position alone gives a tie. Scores are averaged. Default: 2.
   */
  shuffles: z.number().int().min(1).max(16).default(2),
  /** Largest group judged (labels A–Z); a larger group is an `InvalidArgumentError`. Default: 26. */
  maxGroupSize: z.number().int().min(1).max(26).default(26),
  /** Group judgements kept for `takeJudgements` (the oldest are dropped beyond). Default: 1 000. */
  maxKeptJudgements: z.number().int().min(0).default(1000),
  ...commonJudgeOptions,
})
export type GroupJudgeOptions = z.input<typeof groupJudgeOptionsSchema>

/** A comparative group judge: a `TrajectoryScorerV1` that also hands out its judgements. */
export interface GroupJudge extends TrajectoryScorerV1 {
  /** Who judges (`judge.model`) and with which prompt (`judge.promptVersion`, `'ranking-function'` for a function). */
  readonly identity: JudgeIdentity
  /**
   * `judge/groups`, `judge/calls`, `judge/failures` (shuffles that fell back to a tie), `judge/retries`,
   * `judge/incompleteRankings` (rankings that left candidates out), `judge/meanScore`, and where defined
   * `judge/agreement`, `judge/positionBias`, `judge/lengthBias` (see `createGroupJudge`); reset on each call.
   */
  takeMetrics(): Record<string, number>
  /** The judgements made since the last call, oldest first. */
  takeJudgements(): GroupJudgement[]
}

const viewSchema = z.object({ context: z.string(), candidate: z.string() })
const groupSchema = z.array(trajectorySchema)

/** One shuffle's judgement: each candidate's rank (group order), or a failure (all tied). */
interface ShuffleResult {
  ranks: number[]
  /** Ranks by position shown, when the judge gave a ranking. */
  shownRanks?: number[]
  answer: JudgeAnswer<unknown>
  incomplete: boolean
}

/**
 * The comparative group judge of CPO (Comparative Policy Optimization): a group of G trajectories of one context
 * is shown to a judge, shuffled and labelled A, B, C…, and ranked as a whole; rank 1 is best, ties share the mean
 * place, and r_i = (G − rank_i)/(G − 1) (`scoresFromRanks`). Each group is judged `shuffles` times (default 2, the
 * second order the reverse of the first) and the scores averaged, which cancels a preference for a position. A
 * group of one scores 0.5 without a judge call.
 *
 * The judge is a language model (any `PolicyV1`) asked with a versioned template and read leniently
 * (`parseRanking`; candidates left out of its ranking tie for last), re-asked up to `retries` times with a note
 * of what was wrong; or a `RankingFunction` giving scores. A shuffle whose judge never answers readably, throws,
 * times out (`timeoutMs`) or is unreachable counts as a tie (every rank (G + 1)/2) with its raw answer and failure
 * kept in the `GroupJudgement`: scores are always finite, one per trajectory. Only the caller's `signal` rejects.
 * A trajectory with `error` set is judged like any other, on what it said (`trajectoryView`).
 *
 * Metrics, averaged over the groups (or shuffles) where they are defined:
 * - `judge/agreement`: mean over pairs of readable shuffles of the fraction of candidate pairs they order the same
 *   way (`pairwiseAgreement`: 1 identical, 0 reversed; (1 + Kendall τ)/2 without ties).
 * - `judge/positionBias`: over readable shuffles, the share ranking the candidate shown first best (split among
 *   ties for first) minus 1/G; 0 for an unbiased judge, 1 − 1/G for one that always picks the first shown.
 * - `judge/lengthBias`: Spearman correlation between candidate length (characters) and score; +1 when longer
 *   always wins. Groups with constant lengths or scores are skipped.
 */
export function createGroupJudge(options: GroupJudgeOptions): GroupJudge {
  const settings = parseArgument(groupJudgeOptionsSchema, options, 'options')
  const { judge, template } = settings
  const identity: JudgeIdentity = {
    model: judgeModelName(judge, settings.judgeName),
    promptVersion: isPolicy(judge) ? template.version : 'ranking-function',
  }
  let metrics = emptyMetrics()
  let judgements: GroupJudgement[] = []

  async function judgeShuffle(
    context: string,
    candidates: readonly string[],
    order: readonly number[],
    seed: number,
    signal?: AbortSignal,
  ): Promise<ShuffleResult> {
    const size = candidates.length
    const shown = order.map((index) => candidates[index]!)
    let answer: JudgeAnswer<{ ranks: number[]; incomplete: boolean }>
    if (isPolicy(judge)) {
      const labels = candidateLabels(size)
      const messages = template.render({
        context,
        candidates: shown.map((text, position) => ({ label: labels[position]!, text })),
        criteria: settings.criteria,
      })
      answer = await askPolicy(judge, messages, {
        parse: (text) => {
          const parsed = parseRanking(text, labels)
          return parsed.ok ? { ok: true, value: { ranks: ranksFromTiers(parsed.tiers, size), incomplete: parsed.missing.length > 0 } } : parsed
        },
        format: `'Ranking: ${labels.join(' > ')}' (your order, every label once)`,
        retries: settings.retries,
        timeoutMs: settings.timeoutMs,
        temperature: settings.temperature,
        maxTokens: settings.maxTokens,
        seed,
        ...(signal === undefined ? {} : { signal }),
      })
    } else {
      answer = await askFunction(
        (abort) => judge(context, shown, { signal: abort }),
        (result) => {
          const scores = z.array(z.number().refine(Number.isFinite)).length(size).safeParse(result)
          return scores.success
            ? { ok: true, value: { ranks: ranksFromScores(scores.data), incomplete: false } }
            : { ok: false, failure: `the ranking function must return ${size} finite scores` }
        },
        settings.timeoutMs,
        signal,
      )
    }
    if (answer.value === undefined) return { ranks: new Array<number>(size).fill((size + 1) / 2), answer, incomplete: false }
    const ranks = new Array<number>(size)
    order.forEach((candidate, position) => {
      ranks[candidate] = answer.value!.ranks[position]!
    })
    return { ranks, shownRanks: answer.value.ranks, answer, incomplete: answer.value.incomplete }
  }

  return {
    specificationVersion: 'v1',
    name: settings.name,
    identity,
    async score(input, scoreOptions = {}) {
      const group = parseArgument(groupSchema.max(settings.maxGroupSize, `has more than maxGroupSize (${settings.maxGroupSize}) trajectories`), input, 'group')
      const size = group.length
      if (size === 0) return []
      const role = scoredRole(group, settings.role)
      const views = group.map((trajectory, index) =>
        parseInput(viewSchema, settings.view === undefined ? trajectoryView(trajectory, role) : settings.view(trajectory), {
          source: 'the view option',
          path: [index],
        }),
      )
      const context = truncateText(views[0]!.context, settings.maxContextCharacters)
      const candidates = views.map((view) => truncateText(view.candidate, settings.maxCandidateCharacters))
      const groupId = group[0]!.groupId
      let results: ShuffleResult[] = []
      if (size > 1) {
        const orders = shuffleOrders(size, settings.shuffles, settings.seed, groupId)
        results = await Promise.all(
          orders.map((order, shuffle) => judgeShuffle(context, candidates, order, deriveSeed(settings.seed, groupId, shuffle, 'judge'), scoreOptions.signal)),
        )
      }
      const ranking = size === 1 ? [1] : group.map((_, index) => results.reduce((sum, result) => sum + result.ranks[index]!, 0) / results.length)
      const scores = scoresFromRanks(ranking)
      record(
        metrics,
        results,
        scores,
        views.map((view) => view.candidate.length),
      )
      if (settings.maxKeptJudgements > 0) {
        judgements.push(toJudgement(group, ranking, scores, results, identity))
        if (judgements.length > settings.maxKeptJudgements) judgements.shift()
      }
      return scores
    },
    takeMetrics() {
      const taken = summarize(metrics)
      metrics = emptyMetrics()
      return taken
    },
    takeJudgements() {
      const taken = judgements
      judgements = []
      return taken
    },
  }
}

/** The orders shown: order[position] = candidate index. Even shuffles are seeded random, odd ones reverse the previous. */
function shuffleOrders(size: number, shuffles: number, seed: number, groupId: string): number[][] {
  const orders: number[][] = []
  for (let shuffle = 0; shuffle < shuffles; shuffle++) {
    const identity = Array.from({ length: size }, (_, index) => index)
    orders.push(shuffle % 2 === 1 ? orders[shuffle - 1]!.toReversed() : createRandom(deriveSeed(seed, groupId, shuffle)).shuffle(identity))
  }
  return orders
}

function toJudgement(
  group: readonly Trajectory[],
  ranking: number[],
  scores: number[],
  results: readonly ShuffleResult[],
  judge: JudgeIdentity,
): GroupJudgement {
  const failures = results.flatMap((result, shuffle) => (result.answer.failure === undefined ? [] : [`shuffle ${shuffle + 1}: ${result.answer.failure}`]))
  const agreements = shuffleAgreements(results)
  return {
    groupId: group[0]!.groupId,
    candidates: group.map((trajectory) => trajectory.id),
    ranking,
    scores,
    raw: results.map((result) => result.answer.raw),
    failures,
    ...(agreements.length === 0 ? {} : { agreement: mean(agreements) }),
    judge,
  }
}

/** For each pair of shuffles that gave a ranking, the share of candidate pairs they order the same way. */
function shuffleAgreements(results: readonly ShuffleResult[]): number[] {
  const readable = results.filter((result) => result.shownRanks !== undefined)
  const agreements: number[] = []
  for (let first = 0; first < readable.length; first++) {
    for (let second = first + 1; second < readable.length; second++) agreements.push(pairwiseAgreement(readable[first]!.ranks, readable[second]!.ranks))
  }
  return agreements
}

interface Metrics {
  groups: number
  calls: number
  failures: number
  retries: number
  incompleteRankings: number
  scoreSum: number
  scoreCount: number
  agreement: number[]
  positionBias: number[]
  lengthBias: number[]
}

function emptyMetrics(): Metrics {
  return { groups: 0, calls: 0, failures: 0, retries: 0, incompleteRankings: 0, scoreSum: 0, scoreCount: 0, agreement: [], positionBias: [], lengthBias: [] }
}

function record(metrics: Metrics, results: readonly ShuffleResult[], scores: readonly number[], lengths: readonly number[]): void {
  const size = scores.length
  metrics.groups++
  for (const result of results) {
    metrics.calls += result.answer.calls
    metrics.retries += result.answer.retries
    if (result.answer.failure !== undefined) metrics.failures++
    if (result.incomplete) metrics.incompleteRankings++
  }
  for (const score of scores) metrics.scoreSum += score
  metrics.scoreCount += size
  const agreements = shuffleAgreements(results)
  if (agreements.length > 0) metrics.agreement.push(mean(agreements))
  for (const result of results.filter((candidate) => candidate.shownRanks !== undefined)) {
    const shownRanks = result.shownRanks!
    const best = Math.min(...shownRanks)
    const tiedForBest = shownRanks.filter((rank) => rank === best).length
    metrics.positionBias.push((shownRanks[0] === best ? 1 / tiedForBest : 0) - 1 / size)
  }
  const correlation = spearmanCorrelation(lengths, scores)
  if (!Number.isNaN(correlation)) metrics.lengthBias.push(correlation)
}

const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length

function summarize(metrics: Metrics): Record<string, number> {
  const summary: Record<string, number> = {
    'judge/groups': metrics.groups,
    'judge/calls': metrics.calls,
    'judge/failures': metrics.failures,
    'judge/retries': metrics.retries,
    'judge/incompleteRankings': metrics.incompleteRankings,
  }
  if (metrics.scoreCount > 0) summary['judge/meanScore'] = metrics.scoreSum / metrics.scoreCount
  if (metrics.agreement.length > 0) summary['judge/agreement'] = mean(metrics.agreement)
  if (metrics.positionBias.length > 0) summary['judge/positionBias'] = mean(metrics.positionBias)
  if (metrics.lengthBias.length > 0) summary['judge/lengthBias'] = mean(metrics.lengthBias)
  return summary
}
