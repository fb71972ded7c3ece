/**
 * What Ludic's examples share when they report a run: its directory (`runs/<timestamp>`), its files (`report.json`
 * and its Markdown table, its chart), the evaluations logged as metrics and read back, and the command line that
 * starts it. Plain data: nothing here knows a trainer or a tensor.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { InvalidArgumentError } from '@ludic/core'
import { parseCommandLineOptions } from './command-line.js'
import type { ChartSeries } from './run-chart.js'

/** An evaluation: its step and figures (numbers, or named groups of numbers such as one group per opponent). */
export interface Evaluated {
  step: number
}

/** What every self-play example's `report.json` holds (an example adds its own fields). */
export interface ExampleReport<E extends Evaluated> {
  backend: string
  /** The options of the run (functions, such as `log`, left out). */
  options: Record<string, unknown>
  before: E
  after: E
  /** Before, every `evaluateEvery` steps, after. */
  evaluations: E[]
  seconds: number
  runDirectory: string
}

/** A chart series of a report: its points, or a figure of each evaluation. */
export type EvaluationSeries<E extends Evaluated> = ChartSeries | (Omit<ChartSeries, 'points'> & { value: (evaluation: E) => number })

/** A training step's metrics as a trainer's history holds them: the step and named numbers. */
export type LoggedMetrics = { step: number } & Record<string, number>

/** Makes and returns `runDirectory`, or when it is not given a new `runs/<timestamp>` in `exampleDirectory`. */
export async function makeRunDirectory(exampleDirectory: string | URL, runDirectory?: string): Promise<string> {
  const folder = typeof exampleDirectory === 'string' ? exampleDirectory : fileURLToPath(exampleDirectory)
  const directory = runDirectory ?? join(folder, 'runs', new Date().toISOString().replaceAll(':', '-').replace(/\..*$/, ''))
  await mkdir(directory, { recursive: true })
  return directory
}

/** What `runReport` needs of a run: its backend, options, start (`performance.now()`) and directory. */
export interface ReportedRun {
  backend: string
  /** The run's options; functions (such as `log`) are left out of the report. */
  options: object
  /** When the run started, as `performance.now()`. */
  started: number
  runDirectory: string
}

/** A report as `runReport` writes it: the backend, the options, the run's own fields, the seconds and the directory. */
export type RunReport<Fields extends object> = { backend: string; options: Record<string, unknown> } & Fields & { seconds: number; runDirectory: string }

/**
 * A run's report in the examples' order: `backend`, `options` (functions left out), the run's own `fields`, then
 * `seconds` since the run started and `runDirectory`.
 */
export function runReport<Fields extends object>(run: ReportedRun, fields: Fields): RunReport<Fields> {
  const options = Object.fromEntries(Object.entries(run.options).filter(([, value]) => typeof value !== 'function'))
  return { backend: run.backend, options, ...fields, seconds: (performance.now() - run.started) / 1000, runDirectory: run.runDirectory }
}

/** A Markdown page: `# title`, a paragraph, then the body (tables and notes), as one text ending with a newline. */
export function markdownPage(title: string, paragraph: string, body: string): string {
  return `# ${title}\n\n${paragraph}\n\n${body}\n`
}

/**
 * Writes a run's report files into `directory`, in the order given: a name ending in `.json` gets its value as JSON
 * indented by two spaces and a newline, `.jsonl` an array of values one JSON line each, any other name a string as
 * it is (an SVG chart), or an array of strings one line each (a `markdownTable`, a Markdown page). A value of another kind is an
 * `InvalidArgumentError` naming the file, before anything is written.
 */
export async function writeReportFiles(directory: string, files: Readonly<Record<string, unknown>>): Promise<void> {
  const contents = Object.entries(files).map(([name, value]): [string, string] => {
    if (name.endsWith('.json')) return [name, `${JSON.stringify(value, null, 2)}\n`]
    if (name.endsWith('.jsonl') && Array.isArray(value)) return [name, `${value.map((item) => JSON.stringify(item)).join('\n')}\n`]
    if (typeof value === 'string') return [name, value]
    if (Array.isArray(value) && value.every((line) => typeof line === 'string')) return [name, `${value.join('\n')}\n`]
    throw new InvalidArgumentError({
      argument: `files['${name}']`,
      value,
      message: 'must be text or lines of text (a .json file any JSON value, a .jsonl file an array)',
    })
  })
  for (const [name, text] of contents) await writeFile(join(directory, name), text)
}

/**
 * A Markdown table's lines: the header, a `|---|` rule, then one line per row; cells are written as given (format
 * numbers before), `|` in a cell escaped. A row with another number of cells than the header is an
 * `InvalidArgumentError` naming it.
 */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  for (const [index, row] of rows.entries())
    if (row.length !== header.length)
      throw new InvalidArgumentError({ argument: `rows[${index}]`, value: row, message: `has ${row.length} cells, the header ${header.length}` })
  const line = (cells: readonly string[]) => `| ${cells.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`
  return [line(header), `|${header.map(() => '---|').join('')}`, ...rows.map(line)]
}

/**
 * An evaluation as the metrics an evaluation hook returns (the trainer logs each as `eval/<name>`): every
 * number but `step`, named by its path, groups joined with `/` (`{ heuristic: { winRate } }` → `heuristic/winRate`).
 */
export function evaluationMetrics(evaluation: object): Record<string, number> {
  const metrics: Record<string, number> = {}
  const add = (name: string, value: unknown) => {
    if (typeof value === 'number') metrics[name] = value
    else if (typeof value === 'object' && value !== null) for (const [key, inner] of Object.entries(value)) add(`${name}/${key}`, inner)
  }
  for (const [name, value] of Object.entries(evaluation)) if (name !== 'step') add(name, value)
  return metrics
}

/** The evaluations logged in a trainer's history (`eval/*` metrics), rebuilt: `eval/a/b` → `{ step, a: { b } }`. */
export function loggedEvaluations<E extends Evaluated>(history: readonly LoggedMetrics[]): E[] {
  const evaluations: E[] = []
  for (const metrics of history) {
    const names = Object.keys(metrics).filter((name) => name.startsWith('eval/'))
    if (names.length === 0) continue
    const evaluation: Record<string, unknown> = { step: metrics.step }
    for (const name of names) {
      const path = name.slice('eval/'.length).split('/')
      let group = evaluation
      for (const key of path.slice(0, -1)) group = (group[key] ??= {}) as Record<string, unknown>
      group[path.at(-1)!] = metrics[name]
    }
    evaluations.push(evaluation as unknown as E)
  }
  return evaluations
}

/**
 * Runs `main` with the command line's options (`parseCommandLineOptions`) when `moduleUrl` (`import.meta.url`)
 * is the script node started; exits when it ends, or prints the error and sets exit code 1.
 */
export function runExampleMain<Options>(moduleUrl: string, main: (options: Options) => Promise<unknown>): void {
  if (moduleUrl !== pathToFileURL(process.argv[1] ?? '').href) return
  main(parseCommandLineOptions(process.argv.slice(2)) as Options)
    .then(() => process.exit(0))
    .catch((error: unknown) => {
      console.error(error)
      process.exitCode = 1
    })
}
