import type { TrajectoryJudgementRecord, TrajectoryRecord, TrajectoryTurnRecord } from '@ludic/trainer'
import type { EpisodeSummary, MetricsRecord, RunFiles, RunStatus, RunSummary, RunTable, SkippedLine, TableCell } from '../../src/view/api-types.js'

export type { EpisodeSummary, RunFiles, RunStatus, RunSummary, RunTable, SkippedLine, TableCell }
/** One line of metrics.jsonl: `step` and numbers by name (`null` where the trainer wrote a non-finite number). */
export type StepMetrics = MetricsRecord

// The view server's JSON API (read-only, GET only), as the page reads it. Every answer is checked for the shape the
// page relies on before use: a server of another version, or a proxy's error page, becomes an `ApiError` shown in the
// page, never a crash half-way through a render.

export interface MetricsAnswer {
  records: StepMetrics[]
  /** The file's skipped lines (the whole file's, whatever `after` was; the list may be capped). */
  skipped: SkippedLine[]
  /** Lines skipped in all (more than `skipped` lists when the listing is capped). */
  skippedCount: number
}

export interface EpisodesAnswer {
  /** Episodes matching the filters. */
  total: number
  /** Episodes in the file. */
  available: number
  episodes: EpisodeSummary[]
  skipped: SkippedLine[]
  skippedCount: number
  steps: number[]
  environments: string[]
  roles: string[]
}

export interface EpisodeQuery {
  step?: number | undefined
  environment?: string | undefined
  role?: string | undefined
  minReward?: number | undefined
  maxReward?: number | undefined
  offset?: number | undefined
  limit?: number | undefined
}

/** A line of `trajectories.jsonl` (format `ludic.trajectory.v1`) as the server validated it: the trainer's own type. */
export type { TrajectoryRecord }
export type TrajectoryTurn = TrajectoryTurnRecord
export type TrajectoryJudgement = TrajectoryJudgementRecord

export class ApiError extends Error {
  override readonly name = 'ApiError'
  constructor(
    readonly path: string,
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** GETs `path` and returns its JSON, or throws an `ApiError` with the server's message (`{ error: { code, message } }`). */
export async function getJson(path: string, signal?: AbortSignal): Promise<unknown> {
  let response: Response
  try {
    response = await fetch(path, { headers: { accept: 'application/json' }, ...(signal === undefined ? {} : { signal }) })
  } catch (error) {
    if (signal?.aborted === true) throw error
    throw new ApiError(path, 0, `the view server did not answer (${String(error)})`)
  }
  let body: unknown
  try {
    body = await response.json()
  } catch {
    throw new ApiError(path, response.status, `the view server answered ${response.status} with no JSON`)
  }
  if (!response.ok) {
    const message = isObject(body) && isObject(body.error) && typeof body.error.message === 'string' ? body.error.message : `status ${response.status}`
    throw new ApiError(path, response.status, message)
  }
  return body
}

function expect<T>(path: string, body: unknown, check: (body: Record<string, unknown>) => boolean): T {
  if (!isObject(body) || !check(body)) throw new ApiError(path, 200, 'the view server answered in a shape this page does not know (another version?)')
  return body as T
}

const encode = encodeURIComponent

export async function fetchRuns(signal?: AbortSignal): Promise<RunSummary[]> {
  const path = '/api/runs'
  return expect<{ runs: RunSummary[] }>(path, await getJson(path, signal), (body) => Array.isArray(body.runs)).runs
}

export async function fetchMetrics(run: string, after: number | undefined, signal?: AbortSignal): Promise<MetricsAnswer> {
  const path = `/api/runs/${encode(run)}/metrics${after === undefined ? '' : `?after=${after}`}`
  const answer = expect<MetricsAnswer>(path, await getJson(path, signal), (body) => Array.isArray(body.records))
  const skipped = Array.isArray(answer.skipped) ? answer.skipped : []
  return { records: answer.records, skipped, skippedCount: typeof answer.skippedCount === 'number' ? answer.skippedCount : skipped.length }
}

export function episodesPath(run: string, query: EpisodeQuery): string {
  const parameters = new URLSearchParams()
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') parameters.set(name, String(value))
  const search = parameters.toString()
  return `/api/runs/${encode(run)}/episodes${search === '' ? '' : `?${search}`}`
}

export async function fetchEpisodes(run: string, query: EpisodeQuery, signal?: AbortSignal): Promise<EpisodesAnswer> {
  const path = episodesPath(run, query)
  const answer = expect<EpisodesAnswer>(path, await getJson(path, signal), (body) => Array.isArray(body.episodes) && typeof body.total === 'number')
  const skipped = Array.isArray(answer.skipped) ? answer.skipped : []
  return {
    ...answer,
    available: typeof answer.available === 'number' ? answer.available : answer.total,
    skipped,
    skippedCount: typeof answer.skippedCount === 'number' ? answer.skippedCount : skipped.length,
    steps: Array.isArray(answer.steps) ? answer.steps : [],
    environments: Array.isArray(answer.environments) ? answer.environments : [],
    roles: Array.isArray(answer.roles) ? answer.roles : [],
  }
}

export async function fetchEpisode(run: string, index: number, signal?: AbortSignal): Promise<TrajectoryRecord> {
  const path = `/api/runs/${encode(run)}/episodes/${index}`
  return expect<TrajectoryRecord>(path, await getJson(path, signal), (body) => isObject(body.episode) && Array.isArray(body.turns))
}

export async function fetchFiles(run: string, signal?: AbortSignal): Promise<RunFiles> {
  const path = `/api/runs/${encode(run)}/files`
  const answer = expect<RunFiles>(path, await getJson(path, signal), (body) => body.tables === undefined || Array.isArray(body.tables))
  return { ...answer, tables: (answer.tables ?? []).filter((table) => isObject(table) && Array.isArray(table.columns) && Array.isArray(table.rows)) }
}

/**
 * "3 lines skipped: invalid JSON at 4, 9; over 1 MiB at 7". Lines are grouped by reason, at most `perReason` numbers
 * named per reason (then "…"); `count` is the number skipped in all when the server listed fewer. Empty when nothing
 * was skipped.
 */
export function describeSkipped(skipped: readonly SkippedLine[], count = skipped.length, perReason = 8): string {
  const total = Math.max(count, skipped.length)
  if (total === 0) return ''
  const byReason = new Map<string, number[]>()
  for (const { line, reason } of skipped) {
    let lines = byReason.get(reason)
    if (lines === undefined) byReason.set(reason, (lines = []))
    lines.push(line)
  }
  const parts = [...byReason].map(([reason, lines]) => `${reason} at ${lines.slice(0, perReason).join(', ')}${lines.length > perReason ? ', …' : ''}`)
  const unlisted = total - skipped.length
  return `${total} ${total === 1 ? 'line' : 'lines'} skipped: ${[...parts, ...(unlisted > 0 ? [`${unlisted} more not listed`] : [])].join('; ')}`
}
