import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { trajectoriesFileName, trajectoryRecordSchema, type TrajectoryRecord } from '@ludic/trainer'
import { formatIssues } from '../errors.js'
import { JsonlIndex } from './jsonl-index.js'
import type { JsonLine } from './jsonl-tail.js'
import { readSmallJson } from './file-inside.js'
import { type RunDirectory, runConfigFileName } from './run-directories.js'
import type { EpisodeSummary, MetricsRecord, RunStatus, RunSummary } from './api-types.js'

export type { EpisodeSummary, MetricsRecord, RunStatus, RunSummary } from './api-types.js'

interface IndexedEpisode extends EpisodeSummary {
  offset: number
  length: number
}

export interface RunDataOptions {
  maxLineBytes: number
  maxMetricsRecords: number
  maxEpisodes: number
  /** A run whose logs changed this recently (and that has not finished since) is `running`. */
  runningWindowMs: number
}

/** Config files are read when at most this large. */
const maxConfigBytes = 1 << 20
/** Example and CharacterArena reports: at most this large. */
const maxReportBytes = 4 << 20

/** The reason a validated record was refused: its first issues, one `path: message` each. */
export function schemaReason(error: { issues: readonly { code: string; path: PropertyKey[]; message: string }[] }): string {
  const lines = formatIssues(error).flatMap((line) => line.split('\n'))
  return `not a ludic.trajectory.v1 record: ${lines.slice(0, 3).join('; ')}${lines.length > 3 ? `; and ${lines.length - 3} more` : ''}`
}

function parseMetricsLine({ value }: JsonLine): { item: MetricsRecord } | { skip: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { skip: 'not a JSON object' }
  const { step } = value as { step?: unknown }
  if (typeof step !== 'number' || !Number.isSafeInteger(step) || step < 0) return { skip: 'no step (a whole number ≥ 0)' }
  const record: MetricsRecord = { step }
  // Numbers and nulls are metrics; anything else (a future text field) is left out rather than failing the line.
  for (const [name, figure] of Object.entries(value)) if (name !== 'step' && (typeof figure === 'number' || figure === null)) record[name] = figure
  return { item: record }
}

function parseEpisodeLine({ line, offset, length, value }: JsonLine): { item: IndexedEpisode } | { skip: string } {
  const parsed = trajectoryRecordSchema.safeParse(value)
  if (!parsed.success) return { skip: schemaReason(parsed.error) }
  const record = parsed.data
  return {
    item: {
      index: line,
      step: record.step,
      environmentId: record.episode.environmentId,
      roles: record.episode.roles,
      returns: record.episode.returns,
      turnCount: record.turns.length,
      trainer: record.trainer,
      offset,
      length,
    },
  }
}

/** The modification time of `path` in ms, or undefined when it is not there. */
const modifiedMs = (path: string) =>
  stat(path).then(
    (stats) => stats.mtimeMs,
    () => undefined,
  )

/**
 * What the viewer knows of one run directory: its metrics and its episodes (read incrementally, `JsonlIndex`), its
 * status and config. Only files inside the run directory are read (`openFileInside`).
 */
export class RunData {
  readonly metrics: JsonlIndex<MetricsRecord>
  readonly episodes: JsonlIndex<IndexedEpisode>
  private configCache: { key: string; config: unknown; kind: string | undefined } | undefined

  constructor(
    readonly run: RunDirectory,
    private readonly options: RunDataOptions,
  ) {
    this.metrics = new JsonlIndex(run.path, 'metrics.jsonl', parseMetricsLine, { maxLineBytes: options.maxLineBytes, maxItems: options.maxMetricsRecords })
    this.episodes = new JsonlIndex(run.path, trajectoriesFileName, parseEpisodeLine, { maxLineBytes: options.maxLineBytes, maxItems: options.maxEpisodes })
  }

  /**
   * The run's status from its files' times:
   * - `finished` when `model/` (the final model `ludic train` saves) or `report.json` (an example's or CharacterArena's
   *   results) was written at or after the last change of `metrics.jsonl` and `trajectories.jsonl`;
   * - else `running` when the logs or the directory (a checkpoint saved) changed within `runningWindowMs`;
   * - else `unknown` (stopped, crashed, or a step slower than the window).
   */
  async summary(now = Date.now()): Promise<RunSummary> {
    const { path } = this.run
    const logsTimes = await Promise.all(['metrics.jsonl', trajectoriesFileName].map((name) => modifiedMs(join(path, name))))
    const logs = Math.max(0, ...logsTimes.filter((time) => time !== undefined))
    const activity = Math.max(logs, (await modifiedMs(path)) ?? 0)
    const finishedTimes = [await this.modelTime(), await modifiedMs(join(path, 'report.json'))].filter((time) => time !== undefined)
    const finishedAt = finishedTimes.length === 0 ? undefined : Math.max(...finishedTimes)
    const status: RunStatus =
      finishedAt !== undefined && finishedAt >= logs ? 'finished' : now - activity <= this.options.runningWindowMs ? 'running' : 'unknown'
    const { config, kind } = await this.config()
    const last = this.metrics.items.at(-1)
    return {
      id: this.run.id,
      name: this.run.name,
      path: this.run.path,
      status,
      step: last === undefined ? null : last.step,
      updatedAt: new Date(Math.max(activity, finishedAt ?? 0)).toISOString(),
      ...(kind === undefined ? {} : { kind }),
      ...(config === undefined ? {} : { config }),
    }
  }

  /** The newest time of `model/` and its files (a resumed run rewrites them in place), or undefined without one. */
  private async modelTime(): Promise<number | undefined> {
    const model = join(this.run.path, 'model')
    const own = await stat(model).then(
      (stats) => (stats.isDirectory() ? stats.mtimeMs : undefined),
      () => undefined,
    )
    if (own === undefined) return undefined
    const names = (await readdir(model).catch(() => [] as string[])).slice(0, 64)
    const times = await Promise.all(names.map((name) => modifiedMs(join(model, name))))
    return Math.max(own, ...times.filter((time) => time !== undefined))
  }

  /** `run-config.json` (its `kind`, `rl` when it names none), else the `options` of an example's `report.json`; read again when it changes. */
  private async config(): Promise<{ config: unknown; kind: string | undefined }> {
    const files = await Promise.all(
      [runConfigFileName, 'report.json'].map((name) =>
        stat(join(this.run.path, name)).then(
          (stats) => `${stats.mtimeMs}:${stats.size}`,
          () => '-',
        ),
      ),
    )
    const key = files.join('|')
    if (this.configCache?.key === key) return this.configCache
    let config: unknown
    let kind: string | undefined
    const saved = await readSmallJson(this.run.path, runConfigFileName, maxConfigBytes)
    if (typeof saved === 'object' && saved !== null && !Array.isArray(saved)) {
      config = saved
      const named = (saved as { kind?: unknown }).kind
      kind = typeof named === 'string' ? named : 'rl'
    } else {
      const report = await readSmallJson(this.run.path, 'report.json', maxReportBytes)
      const options = (report as { options?: unknown } | undefined)?.options
      if (typeof options === 'object' && options !== null) config = options
    }
    this.configCache = { key, config, kind }
    return this.configCache
  }

  /** The episode on line `index` of `trajectories.jsonl`, validated; `undefined` when no episode is on that line. */
  async episode(index: number): Promise<{ record: TrajectoryRecord } | { invalid: string } | undefined> {
    await this.episodes.refresh()
    const entry = findByIndex(this.episodes.items, index)
    if (entry === undefined) {
      const skipped = this.episodes.skipped.find((line) => line.line === index)
      return skipped === undefined ? undefined : { invalid: skipped.reason }
    }
    const value = await this.episodes.readLine(entry.offset, entry.length)
    if (value === undefined) return { invalid: 'the file changed while it was read: try again' }
    const parsed = trajectoryRecordSchema.safeParse(value)
    return parsed.success ? { record: parsed.data } : { invalid: schemaReason(parsed.error) }
  }
}

/** The episode on line `index`, by binary search (the items are in line order). */
function findByIndex<Item extends { index: number }>(items: readonly Item[], index: number): Item | undefined {
  let low = 0
  let high = items.length - 1
  while (low <= high) {
    const middle = (low + high) >> 1
    const found = items[middle]!.index
    if (found === index) return items[middle]
    if (found < index) low = middle + 1
    else high = middle - 1
  }
  return undefined
}
