/**
 * The same run with another advantage estimator, in one line: a Kuhn Poker self-play run (`src/kuhn-run.ts`, the
 * run of `examples/selfplay-kuhn-poker`) once per estimator — RAE (the default), `createRloo()` and a
 * role-conditioned leave-one-out estimator written here — with everything else equal, and the results
 * compared in a table (exact exploitability before/after, win rate against random, seconds).
 *
 *   npx tsx src/main.ts --steps 40 --estimators rae,rloo,role-rloo
 */
import { writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRae, createRloo, parseAdvantageBatch } from '@ludic/advantages'
import { parseArgument, type AdvantageEstimatorV1 } from '@ludic/core'
import { makeRunDirectory, renderRunChart, runExampleMain } from '@ludic/report'
import { z } from 'zod'
import { kuhnRunOptionsSchema, runKuhnSelfPlay, type KuhnRunReport } from './kuhn-run.js'

/**
 * A custom estimator: role-conditioned leave-one-out. An episode is one role's turns in one trajectory;
 * its return is the sum of its token rewards. Its baseline is the mean return of the OTHER plays of the
 * same group (same deal: `groupSize` plays of one reset seed) by the same role; every turn of the episode
 * gets A = return − baseline on all its tokens. Like RLOO, but one baseline per role (Kuhn is zero-sum: a
 * group's mean over both seats is ≈ 0) and per episode rather than per turn (a turn that is not a role's
 * last carries no reward of its own). A group of one has no baseline: A = return.
 */
export function createRoleRloo(): AdvantageEstimatorV1 {
  return {
    specificationVersion: 'v1',
    name: 'role-rloo',
    estimate(input) {
      const batch = parseAdvantageBatch(input) // the same checks as the built-in estimators
      const roleOf = (sample: number) => batch.roles?.[sample] ?? ''
      const episodes = new Map<string, { group: string; samples: number[]; score: number }>()
      batch.tokenRewards.forEach((rewards, sample) => {
        const id = JSON.stringify([batch.trajectoryIds?.[sample] ?? sample, roleOf(sample)])
        const episode = episodes.get(id) ?? { group: JSON.stringify([batch.groupIds[sample], roleOf(sample)]), samples: [], score: 0 }
        episode.samples.push(sample)
        episode.score += rewards.reduce((sum, reward) => sum + reward, 0)
        episodes.set(id, episode)
      })
      const groups = new Map<string, { sum: number; count: number }>()
      for (const { group, score } of episodes.values()) {
        const totals = groups.get(group) ?? { sum: 0, count: 0 }
        totals.sum += score
        totals.count++
        groups.set(group, totals)
      }
      const perSample = new Float64Array(batch.tokenRewards.length)
      for (const { group, samples, score } of episodes.values()) {
        const { sum, count } = groups.get(group)!
        const advantage = count > 1 ? score - (sum - score) / (count - 1) : score
        for (const sample of samples) perSample[sample] = advantage
      }
      const advantages = batch.tokenRewards.map((rewards, sample) => new Float32Array(rewards.length).fill(perSample[sample]!))
      return { advantages, returns: advantages.map((row) => row.slice()) }
    },
  }
}

/** The estimators this example can swap in, by name; each run gets a fresh one (RAE keeps state). */
export const estimatorFactories: Record<string, () => AdvantageEstimatorV1> = {
  rae: () => createRae(),
  rloo: () => createRloo(),
  'role-rloo': () => createRoleRloo(),
}

/** The Kuhn run's options this comparison varies (the rest keep the Kuhn example's defaults), and its own. */
export const mainOptionsSchema = kuhnRunOptionsSchema
  .pick({
    steps: true,
    episodesPerStep: true,
    sftSteps: true,
    miniBatchSize: true,
    evaluateEvery: true,
    evaluationEpisodes: true,
    seed: true,
    runDirectory: true,
    backend: true,
    progress: true,
    log: true,
  })
  .extend({
    /** Which estimators to run, in order (comma-separated on the command line): `rae`, `rloo`, `role-rloo`. */
    estimators: z
      .union([z.array(z.string()), z.string().transform((text) => text.split(',').map((name) => name.trim()))])
      .pipe(z.array(z.enum(['rae', 'rloo', 'role-rloo'])).min(1))
      .default(['rae', 'rloo', 'role-rloo']),
    /** Plays per deal (the trainer's `batch.groupSize`): RLOO and role-rloo compare the plays of one deal; they need > 1. */
    groupSize: z.number().int().positive().default(4),
  })
export type MainOptions = z.input<typeof mainOptionsSchema>

export interface Row {
  estimator: string
  exploitabilityBefore: number
  exploitabilityAfter: number
  winRateBefore: number
  winRateAfter: number
  invalidRateAfter: number
  seconds: number
  backend: string
}

export interface Comparison {
  options: Record<string, unknown>
  rows: Row[]
  runDirectory: string
}

const exampleDirectory = join(dirname(fileURLToPath(import.meta.url)), '..')
const colors = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd']

export async function main(options: MainOptions = {}): Promise<Comparison> {
  const { estimators, groupSize, ...settings } = parseArgument(mainOptionsSchema, options, 'options')
  const { log } = settings
  const runDirectory = await makeRunDirectory(exampleDirectory, settings.runDirectory)
  const rows: Row[] = []
  const reports: { name: string; report: KuhnRunReport }[] = []
  for (const name of estimators) {
    log(`— ${name} —`)
    // The swap, in one line: `advantage: createRloo()` (or any AdvantageEstimatorV1) instead of the default RAE.
    const runOptions = kuhnRunOptionsSchema.parse({ ...settings, runDirectory: join(runDirectory, name) })
    const report = await runKuhnSelfPlay(runOptions, { advantage: estimatorFactories[name]!(), groupSize })
    reports.push({ name, report })
    rows.push({
      estimator: name,
      exploitabilityBefore: report.before.exploitability,
      exploitabilityAfter: report.after.exploitability,
      winRateBefore: report.before.winRate,
      winRateAfter: report.after.winRate,
      invalidRateAfter: report.after.invalidRate,
      seconds: report.seconds,
      backend: report.backend,
    })
  }

  const table = formatTable(rows)
  for (const line of table) log(line)
  const comparison: Comparison = {
    options: { estimators, groupSize, ...Object.fromEntries(Object.entries(settings).filter(([name]) => name !== 'log')) },
    rows,
    runDirectory,
  }
  await writeFile(join(runDirectory, 'comparison.json'), `${JSON.stringify(comparison, null, 2)}\n`)
  await writeFile(join(runDirectory, 'comparison.md'), `${table.join('\n')}\n`)
  await writeFile(
    join(runDirectory, 'chart.svg'),
    await renderRunChart(
      'Kuhn Poker self-play: exact exploitability by advantage estimator',
      reports.map(({ name, report }, index) => ({
        name: `${name}: exploitability`,
        color: colors[index % colors.length]!,
        points: report.evaluations.map((evaluation) => ({ step: evaluation.step, value: evaluation.exploitability })),
        reference: { value: 11 / 24, label: 'uniform 0.458' },
      })),
    ),
  )
  log(`comparison, chart and each run in ${runDirectory}`)
  return comparison
}

/** A Markdown table: one row per estimator. */
export function formatTable(rows: readonly Row[]): string[] {
  const pct = (value: number) => `${(100 * value).toFixed(1)}%`
  return [
    '| estimator | exploitability before → after | win rate vs random before → after | invalid after | seconds |',
    '| --- | --- | --- | --- | --- |',
    ...rows.map(
      (row) =>
        `| ${row.estimator} | ${row.exploitabilityBefore.toFixed(3)} → ${row.exploitabilityAfter.toFixed(3)} | ${pct(row.winRateBefore)} → ${pct(row.winRateAfter)} | ${pct(row.invalidRateAfter)} | ${row.seconds.toFixed(0)} (${row.backend}) |`,
    ),
  ]
}

runExampleMain(import.meta.url, main)
