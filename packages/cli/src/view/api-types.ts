// The JSON shapes of `ludic view`'s API, written once: the server answers with them and the page (view/src/api.ts)
// reads them (type-only; the page still checks each answer's shape before use). No imports: the page's build and
// type-check take this file without Node's types.

/** A line of a JSON Lines file that was not used, and why (1-based line number; 0: the file as a whole). */
export interface SkippedLine {
  line: number
  reason: string
}

/** A line of `metrics.jsonl` as the viewer serves it: `step`, then numbers (`null` where the trainer logged a non-finite one). */
export type MetricsRecord = { step: number } & Record<string, number | null>

/** An episode of `trajectories.jsonl` as the episode list shows it. */
export interface EpisodeSummary {
  /** The line of `trajectories.jsonl` it is on (1-based): `/api/runs/:id/episodes/:index` reads it. */
  index: number
  step: number
  environmentId: string
  roles: string[]
  returns: Record<string, number>
  turnCount: number
  trainer: string
}

/** How a run is doing, by its files' times (see `RunData.summary`). */
export type RunStatus = 'running' | 'finished' | 'unknown'

/** A run as `/api/runs` lists it. */
export interface RunSummary {
  id: string
  name: string
  path: string
  status: RunStatus
  /** The last step in `metrics.jsonl`; null before the first. */
  step: number | null
  /** ISO 8601 time of the run's latest file change. */
  updatedAt: string
  /** The run config's `kind` (`rl`, `cpo`, `sft`, `preference`, `reward-model`), when `ludic train` saved the config. */
  kind?: string
  /** The run's config: `run-config.json` (written by `ludic train`), else an example's `report.json` `options`. */
  config?: unknown
}

/** A table cell: text, a number, or null (nothing measured). */
export type TableCell = string | number | null

/** A table the page shows as it is. */
export interface RunTable {
  name: string
  columns: string[]
  rows: TableCell[][]
  /** The file it was read from, relative to the run directory. */
  source: string
}

/** What `/api/runs/:id/files` answers. */
export interface RunFiles {
  /** The run's Markdown files, joined (each after a `## <file>` heading when there are several). */
  report?: string
  /** The files `report` was made of, relative to the run directory. */
  reportFiles: string[]
  tables: RunTable[]
}
