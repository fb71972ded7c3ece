/**
 * The ablation table of issue #32: each lever of the TicTacToe recipe against the same budget (steps) and seeds.
 * Every row is `main`'s options beyond the budget; every (row, seed) is one run in `<runsDirectory>/<row>-seed<k>`
 * (a run whose `report.json` exists is read, not run again, so an interrupted table resumes), and the table is
 * written to `<runsDirectory>/ablation.md` and `ablation.json`.
 *
 *   npx tsx src/ablation.ts --backend tensorflow --steps 120 --seeds 0,1,2 --rows self-play,random,league
 */
import { join } from 'node:path'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { runExampleMain } from '@ludic/report'
import { wilsonInterval } from '@ludic/trainer'
import { z } from 'zod'
import { main, mainOptionsSchema, type MainOptions, type Report } from './main.js'

/** One row: a lever and the options that turn it on (beyond the budget and the seed). */
export interface AblationRow {
  name: string
  lever: string
  options: MainOptions
}

/**
 * The levers measured. `random` is the example's default (a uniform random player in one seat of half the games);
 * every later row adds one lever to it, `minimax-kl` two (the README's r2 recipe), `per-state` two (baselines per
 * opponent, then per position within them); `kl-zero` (the sampled-token KL annealed to 0) is `exact-kl`'s control.
 */
export const ablationRows: readonly AblationRow[] = [
  { name: 'self-play', lever: 'pure self-play (RAE + PPO)', options: { randomOpponentShare: 0 } },
  { name: 'random', lever: '+ random player, share 0.5 (the default)', options: {} },
  { name: 'league', lever: '+ league of own snapshots, share 0.25', options: { randomOpponentShare: 0.5, leagueShare: 0.25 } },
  { name: 'critic', lever: '+ critic (GAE λ 0.95, value head on the trunk)', options: { advantage: 'gae', critic: 'shared', gaeLambda: 0.95 } },
  { name: 'minimax', lever: '+ minimax player, share 0.35', options: { minimaxOpponentShare: 0.35 } },
  { name: 'kl-anneal', lever: '+ KL annealed to 0.2 β', options: { klFinalRatio: 0.2 } },
  { name: 'minimax-kl', lever: '+ minimax 0.35 + KL annealed to 0.2 β (r2)', options: { minimaxOpponentShare: 0.35, klFinalRatio: 0.2 } },
  { name: 'tactical', lever: '+ tactical player, share 0.25', options: { randomOpponentShare: 0.45, tacticalOpponentShare: 0.25 } },
  { name: 'heads', lever: '+ 32 attention heads of 4 (the same parameters)', options: { attentionHeads: 32 } },
  { name: 'per-opponent', lever: '+ RAE baselines per opponent', options: { raePerOpponent: true } },
  { name: 'per-state', lever: '+ RAE baselines per opponent and position', options: { raePerOpponent: true, raePerState: true } },
  { name: 'random-openings', lever: '+ random openings (exploring starts), share 0.5', options: { randomOpeningShare: 0.5 } },
  { name: 'temperature', lever: '+ training games sampled at temperature 1.5', options: { temperature: 1.5 } },
  { name: 'kl-zero', lever: '+ KL annealed to 0', options: { klFinalRatio: 0 } },
  { name: 'exact-kl', lever: '+ exact forward KL (`full-forward`) annealed to 0', options: { klEstimator: 'full-forward', klFinalRatio: 0 } },
]

const listOf = <T extends z.ZodType>(item: T) =>
  z.preprocess(
    (value) => (typeof value === 'string' ? value.split(',').map((entry) => entry.trim()) : typeof value === 'number' ? [value] : value),
    z.array(item).min(1),
  )

export const ablationOptionsSchema = z.object({
  /** The budget: self-play steps of every run. Default 120 (the example's). */
  steps: z.number().int().positive().default(120),
  /** Seeds, comma-separated on the command line. Default 0, 1, 2. */
  seeds: listOf(z.coerce.number().int().min(0)).default([0, 1, 2]),
  /** Rows by name (`ablationRows`), comma-separated. Default: all. */
  rows: listOf(z.string()).optional(),
  /** `main`'s backend for every run. */
  backend: z.string().optional(),
  /**
   * Where the runs and the table go. Default `runs/ablation` beside the example. (Not `--directory`: tfjs-node's
   * loader, node-pre-gyp, reads that flag from the process's arguments and looks for its addon there.)
   */
  runsDirectory: z.string().min(1).optional(),
})
export type AblationOptions = z.input<typeof ablationOptionsSchema>

/** One run's figures in the table (from its `report.json`). */
export interface AblationResult {
  row: string
  seed: number
  winRate: number
  winRateAsO: number
  winRateAsX: number
  lossRate: number
  greedyWinRate: number
  minimaxDrawRate: number
  minimaxLossRate: number
  greedyMinimaxLost: boolean
  seconds: number
}

export const resultOf = (row: string, seed: number, report: Report): AblationResult => ({
  row,
  seed,
  winRate: report.after.winRate,
  winRateAsO: report.after.winRateAsO,
  winRateAsX: report.after.winRateAsX,
  lossRate: report.after.lossRate,
  greedyWinRate: report.after.greedyWinRate,
  minimaxDrawRate: report.minimaxAfter.sampled.drawRate,
  minimaxLossRate: report.minimaxAfter.sampled.lossRate,
  greedyMinimaxLost: report.minimaxAfter.greedy.lossRate > 0,
  seconds: report.seconds,
})

const pct = (value: number) => (100 * value).toFixed(1)
const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length

/**
 * The table in Markdown: per row, the win rate vs random of each seed, the pooled win rate with its 95 % Wilson
 * interval (`gamesPerRun` games a run), the mean as O / as X and lost, greedy, sampled draws and losses against minimax,
 * how many seeds' greedy play lost to minimax, and the mean wall time.
 */
export function ablationTable(rows: readonly AblationRow[], results: readonly AblationResult[], gamesPerRun: number): string {
  const lines = [
    '| lever | vs random, per seed (%) | pooled [95 %] | as O / as X | lost to random | greedy vs random | vs minimax sampled D / L | greedy lost to minimax | wall time |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ]
  for (const row of rows) {
    const runs = results.filter((result) => result.row === row.name)
    if (runs.length === 0) continue
    const wins = runs.reduce((sum, run) => sum + Math.round(run.winRate * gamesPerRun), 0)
    const [low, high] = wilsonInterval(wins, gamesPerRun * runs.length)
    lines.push(
      `| ${row.lever} | ${runs.map((run) => pct(run.winRate)).join(' / ')} | ${pct(wins / (gamesPerRun * runs.length))} [${pct(low)}, ${pct(high)}] | ` +
        `${pct(mean(runs.map((run) => run.winRateAsO)))} / ${pct(mean(runs.map((run) => run.winRateAsX)))} | ${pct(mean(runs.map((run) => run.lossRate)))} | ` +
        `${pct(mean(runs.map((run) => run.greedyWinRate)))} | ${pct(mean(runs.map((run) => run.minimaxDrawRate)))} / ${pct(mean(runs.map((run) => run.minimaxLossRate)))} | ` +
        `${runs.filter((run) => run.greedyMinimaxLost).length} of ${runs.length} | ${mean(runs.map((run) => run.seconds)).toFixed(0)} s |`,
    )
  }
  return `${lines.join('\n')}\n`
}

/** Runs the rows' missing runs one after the other, then writes and returns the table. */
export async function ablation(options: AblationOptions = {}): Promise<{ table: string; results: AblationResult[] }> {
  const parsed = parseArgument(ablationOptionsSchema, options, 'options')
  const rows = parsed.rows === undefined ? ablationRows : parsed.rows.map((name) => rowNamed(name))
  // Every row's options are checked before the first run starts.
  for (const row of rows) parseArgument(mainOptionsSchema, { ...row.options, steps: parsed.steps }, `rows.${row.name}`)
  const directory = parsed.runsDirectory ?? join(new URL('..', import.meta.url).pathname, 'runs', 'ablation')
  await mkdir(directory, { recursive: true })
  const results: AblationResult[] = []
  // The games of each run's last evaluation against random (the options' `evaluationEpisodes`, 400 by default).
  let gamesPerRun: number | undefined
  for (const row of rows)
    for (const seed of parsed.seeds) {
      const runDirectory = join(directory, `${row.name}-seed${seed}`)
      const reportFile = join(runDirectory, 'report.json')
      const report: Report = existsSync(reportFile)
        ? (JSON.parse(await readFile(reportFile, 'utf8')) as Report)
        : await main({
            ...row.options,
            steps: parsed.steps,
            seed,
            evaluateEvery: parsed.steps,
            runDirectory,
            progress: false,
            ...(parsed.backend === undefined ? {} : { backend: parsed.backend }),
          })
      gamesPerRun ??= (report.options as { evaluationEpisodes: number }).evaluationEpisodes
      results.push(resultOf(row.name, seed, report))
      console.log(`${row.name} seed ${seed}: vs random ${pct(report.after.winRate)} %`)
    }
  const table = ablationTable(rows, results, gamesPerRun ?? 400)
  await writeFile(join(directory, 'ablation.md'), `${parsed.steps} self-play steps a run, seeds ${parsed.seeds.join(', ')}\n\n${table}`)
  await writeFile(join(directory, 'ablation.json'), `${JSON.stringify({ steps: parsed.steps, seeds: parsed.seeds, results }, null, 2)}\n`)
  console.log(table)
  return { table, results }
}

function rowNamed(name: string): AblationRow {
  const row = ablationRows.find((candidate) => candidate.name === name)
  if (row === undefined)
    throw new InvalidArgumentError({
      argument: 'options.rows',
      value: name,
      message: `is not a row (${ablationRows.map((candidate) => candidate.name).join(', ')})`,
    })
  return row
}

runExampleMain(import.meta.url, ablation)
