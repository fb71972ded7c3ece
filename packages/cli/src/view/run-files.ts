import { readdir, realpath } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'
import { isInside, readSmallFileInside } from './file-inside.js'
import type { MetricsRecord } from './run-data.js'
import type { RunFiles, RunTable } from './api-types.js'

export type { RunFiles, RunTable, TableCell } from './api-types.js'

/** The folder inside a run directory read besides its top level: where `ludic eval <run>/model --out <run>/eval` writes. */
export const evaluationFolder = 'eval'

const maxMarkdownBytes = 1 << 20
const maxJsonBytes = 4 << 20
/** Files of one kind read per request at most, and bytes read in all. */
const maxFiles = 32
const maxTotalBytes = 16 << 20

const cell = z.union([z.string(), z.number(), z.null()])

/** A report of `@ludic/bench` (`ludic eval`, `ludic bench`: `<suite>.json`), as much of it as the tables need. */
const benchReportSchema = z.object({
  suite: z.string(),
  tables: z.array(z.object({ title: z.string(), columns: z.array(z.string()), rows: z.array(z.array(cell)) })),
})

/** CharacterArena's `report.json` (`examples/character-arena`): its `arena`, an `ArenaReport` of `@ludic/roleplay`. */
const arenaReportSchema = z.object({
  arena: z.object({
    standings: z.array(
      z.object({
        rank: z.number(),
        player: z.string(),
        rating: z.number(),
        interval: z.tuple([z.number(), z.number()]),
        wins: z.number(),
        ties: z.number(),
        losses: z.number(),
        games: z.number(),
        winRate: z.number().nullable(),
      }),
    ),
    winRateMatrix: z.object({ players: z.array(z.string()), winRates: z.array(z.array(z.number().nullable())) }).optional(),
    confidence: z.number().optional(),
  }),
})

/** A self-play example's `report.json` (`writeReport` of `@ludic/trainer/example`'s `startExampleRun`): its evaluations before, during and after training. */
const exampleReportSchema = z.object({ evaluations: z.array(z.looseObject({ step: z.number() })).min(1) })

/**
 * The report-like files of a run: its Markdown (`*.md` at the top and in `eval/`), and tables from the JSON those
 * commands write (see the README of `ludic view`):
 * - CharacterArena's `report.json`: ratings with their bootstrap intervals, and the win-rate matrix;
 * - a self-play example's `report.json`: its evaluations, one row per evaluation step;
 * - `@ludic/bench` reports (`<suite>.json` of `ludic eval` / `ludic bench` written into the run directory or `eval/`):
 *   their tables as they are (the `games` suite's win rates with Wilson intervals);
 * - `metrics.jsonl`: the last step's `eval/…` figures (win rates with their `…Low`/`…High` interval), one row per opponent.
 * Only files inside the run directory are read, each bounded in size.
 */
export async function readRunFiles(root: string, metrics: readonly MetricsRecord[]): Promise<RunFiles> {
  const names = await listFiles(root)
  let budget = maxTotalBytes
  const read = async (name: string, limit: number) => {
    if (budget <= 0) return undefined
    const text = await readSmallFileInside(root, name, Math.min(limit, budget))
    if (text !== undefined) budget -= Buffer.byteLength(text)
    return text
  }
  const order = (name: string) => (name === 'report.md' ? 0 : name === 'arena.md' ? 1 : name.includes('/') ? 3 : 2)
  const markdownNames = names
    .filter((name) => name.endsWith('.md'))
    .sort((a, b) => order(a) - order(b) || a.localeCompare(b))
    .slice(0, maxFiles)
  const markdown: { name: string; text: string }[] = []
  for (const name of markdownNames) {
    const text = await read(name, maxMarkdownBytes)
    if (text !== undefined) markdown.push({ name, text })
  }
  const tables: RunTable[] = []
  for (const name of names.filter((name) => name.endsWith('.json') && name !== 'run-config.json').slice(0, maxFiles)) {
    const text = await read(name, maxJsonBytes)
    if (text === undefined) continue
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      continue
    }
    tables.push(...tablesOf(name, value))
  }
  const evaluation = evaluationTable(metrics)
  if (evaluation !== undefined) tables.push(evaluation)
  const report =
    markdown.length === 0
      ? undefined
      : markdown.length === 1
        ? markdown[0]!.text
        : markdown.map((file) => `## ${file.name}\n\n${file.text.trim()}\n`).join('\n')
  return { ...(report === undefined ? {} : { report }), reportFiles: markdown.map((file) => file.name), tables }
}

/** The names of the files at the top of `root` and in its `eval/` folder (when that is a real folder inside it). */
async function listFiles(root: string): Promise<string[]> {
  const files = async (folder: string, prefix: string) =>
    (await readdir(folder, { withFileTypes: true }).catch(() => []))
      .slice(0, 1000)
      .filter((entry) => entry.isFile() || entry.isSymbolicLink())
      .map((entry) => `${prefix}${entry.name}`)
      .sort()
  const evaluation = await realpath(join(root, evaluationFolder)).catch(() => undefined)
  const inner = evaluation !== undefined && isInside(root, evaluation) && evaluation !== root ? await files(evaluation, `${evaluationFolder}/`) : []
  return [...(await files(root, '')), ...inner]
}

/** The tables a JSON file holds, when it is one of the reports `readRunFiles` knows. */
function tablesOf(source: string, value: unknown): RunTable[] {
  const bench = benchReportSchema.safeParse(value)
  if (bench.success)
    return bench.data.tables
      .filter((table) => table.rows.every((row) => row.length === table.columns.length))
      .map((table) => ({ name: `${bench.data.suite}: ${table.title}`, columns: table.columns, rows: table.rows, source }))
  const arena = arenaReportSchema.safeParse(value)
  if (arena.success) {
    const { standings, winRateMatrix, confidence } = arena.data.arena
    const level = confidence === undefined ? '' : ` ${Number((100 * confidence).toFixed(2))}%`
    const tables: RunTable[] = [
      {
        name: 'CharacterArena ratings',
        columns: ['Rank', 'Player', 'Rating', `Interval${level} low`, `Interval${level} high`, 'Win rate', 'Wins', 'Ties', 'Losses', 'Games'],
        rows: standings.map((row) => [
          row.rank,
          row.player,
          row.rating,
          row.interval[0],
          row.interval[1],
          row.winRate,
          row.wins,
          row.ties,
          row.losses,
          row.games,
        ]),
        source,
      },
    ]
    if (winRateMatrix !== undefined)
      tables.push({
        name: 'CharacterArena win rate of the row against the column',
        columns: ['', ...winRateMatrix.players],
        rows: winRateMatrix.players.map((player, row) => [
          player,
          ...(winRateMatrix.winRates[row] ?? []).map((rate, column) => (row === column ? null : rate)),
        ]),
        source,
      })
    return tables
  }
  const example = exampleReportSchema.safeParse(value)
  if (example.success) {
    const rows = example.data.evaluations.map((evaluation) => flatten(evaluation))
    const columns = ['step', ...new Set(rows.flatMap((row) => Object.keys(row)).filter((name) => name !== 'step'))]
    return [{ name: 'Evaluations', columns, rows: rows.map((row) => columns.map((column) => row[column] ?? null)), source }]
  }
  return []
}

/** The numbers of an object by path (`{ a: { b: 1 } }` → `{ 'a/b': 1 }`), at most 4 levels deep. */
function flatten(value: object, prefix = '', depth = 0, into: Record<string, number> = {}): Record<string, number> {
  for (const [name, inner] of Object.entries(value)) {
    if (typeof inner === 'number') into[`${prefix}${name}`] = inner
    else if (typeof inner === 'object' && inner !== null && !Array.isArray(inner) && depth < 4) flatten(inner, `${prefix}${name}/`, depth + 1, into)
  }
  return into
}

/**
 * The last evaluation the trainer logged (`eval/<opponent>/<figure>` in `metrics.jsonl`, as `createRlTrainer`'s
 * evaluation hook writes them: `winRate` with `winRateLow`/`winRateHigh`, `meanReward`, `invalidRate`…): one row per
 * opponent (`eval/<figure>` alone: a row named `-`).
 */
function evaluationTable(metrics: readonly MetricsRecord[]): RunTable | undefined {
  for (let index = metrics.length - 1; index >= 0; index--) {
    const record = metrics[index]!
    const names = Object.keys(record).filter((name) => name.startsWith('eval/'))
    if (names.length === 0) continue
    const groups = new Map<string, Record<string, number | null>>()
    for (const name of names) {
      const parts = name.slice('eval/'.length).split('/')
      const figure = parts.pop()!
      const group = parts.length === 0 ? '-' : parts.join('/')
      if (!groups.has(group)) groups.set(group, {})
      groups.get(group)![figure] = record[name] ?? null
    }
    const figures = [...new Set([...groups.values()].flatMap((figures) => Object.keys(figures)))]
    return {
      name: `Evaluation at step ${record.step}`,
      columns: ['opponent', ...figures],
      rows: [...groups].map(([group, values]) => [group, ...figures.map((figure) => values[figure] ?? null)]),
      source: 'metrics.jsonl',
    }
  }
  return undefined
}
