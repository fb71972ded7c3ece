/**
 * `collection` benchmark: Kuhn Poker self-play with synchronous collection against asynchronous collection
 * (one rollout worker thread generating while the main thread trains), same settings and seed, run one after
 * the other in this process. Reports per mode: episodes per second of training (episodes ÷ Σ (time waiting for
 * a batch + update time), evaluation excluded), seconds per step, and time-to-target — that training time until
 * the first evaluation with exploitability ≤ `--target` — plus the final exploitability.
 *
 *   npm run bench -- collection [--steps 100] [--evaluate-every 5] [--target 0.1] [--seed 0] [--modes sync,async]
 *
 * Writes `<repository root>/bench-results/collection.{json,md}`.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseCommandLineOptions } from '@ludic/trainer'
import { z } from 'zod'
import { main, type Report } from '../src/main.js'

const optionsSchema = z.strictObject({
  steps: z.number().int().positive().default(100),
  evaluateEvery: z.number().int().positive().default(5),
  target: z.number().positive().default(0.1),
  seed: z.number().int().default(0),
  modes: z.string().default('sync,async'),
  backend: z.string().default('wasm'),
})

interface ModeResult {
  mode: string
  steps: number
  episodes: number
  trainingSeconds: number
  episodesPerSecond: number
  secondsPerStep: number
  meanWaitSeconds: number
  meanUpdateSeconds: number
  meanStaleness: number | undefined
  timeToTargetSeconds: number | undefined
  stepsToTarget: number | undefined
  exploitabilityBefore: number
  exploitabilityAfter: number
  invalidRateAfter: number
  wallSeconds: number
}

const options = optionsSchema.parse(parseCommandLineOptions(process.argv.slice(2)))
const root = fileURLToPath(new URL('../../../', import.meta.url))
const results: ModeResult[] = []
for (const mode of options.modes.split(',')) {
  const runDirectory = await mkdtemp(join(tmpdir(), `ludic-collection-${mode}-`))
  const started = performance.now()
  const report: Report = await main({
    steps: options.steps,
    evaluateEvery: options.evaluateEvery,
    seed: options.seed,
    backend: options.backend,
    asyncWorkers: mode === 'async' ? 1 : 0,
    runDirectory,
    progress: false,
    log: (line) => console.log(`[${mode}] ${line}`),
  })
  const wallSeconds = (performance.now() - started) / 1000
  const metrics = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, number>)
  let elapsed = 0
  let timeToTarget: number | undefined
  let stepsToTarget: number | undefined
  for (const record of metrics) {
    elapsed += record.rolloutSeconds! + record.updateSeconds!
    const exploitability = record['eval/exploitability']
    if (timeToTarget === undefined && exploitability !== undefined && exploitability <= options.target) {
      timeToTarget = elapsed
      stepsToTarget = record.step
    }
  }
  const episodes = metrics.reduce((total, record) => total + record.episodes!, 0)
  const mean = (name: string) =>
    metrics.some((record) => record[name] !== undefined) ? metrics.reduce((total, record) => total + (record[name] ?? 0), 0) / metrics.length : undefined
  results.push({
    mode,
    steps: metrics.length,
    episodes,
    trainingSeconds: elapsed,
    episodesPerSecond: episodes / elapsed,
    secondsPerStep: elapsed / metrics.length,
    meanWaitSeconds: mean('rolloutSeconds')!,
    meanUpdateSeconds: mean('updateSeconds')!,
    meanStaleness: mean('staleness'),
    timeToTargetSeconds: timeToTarget,
    stepsToTarget,
    exploitabilityBefore: report.before.exploitability,
    exploitabilityAfter: report.after.exploitability,
    invalidRateAfter: report.after.invalidRate,
    wallSeconds,
  })
  console.log(JSON.stringify(results.at(-1)))
  await rm(runDirectory, { recursive: true, force: true })
}

const sync = results.find((result) => result.mode === 'sync')
const fixed = (value: number | undefined, digits = 1) => (value === undefined ? '—' : value.toFixed(digits))
const lines = [
  `# collection: synchronous vs asynchronous (Kuhn Poker self-play, ${options.steps} steps, seed ${options.seed}, ${options.backend})`,
  '',
  `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, load average ${loadavg()
    .map((value) => value.toFixed(1))
    .join(' ')} at the end. Run one after the other in one process.`,
  '',
  `| mode | episodes/s | s/step | wait s/step | update s/step | staleness | time to ≤ ${options.target} (steps) | exploitability before → after | invalid after |`,
  '|---|---|---|---|---|---|---|---|---|',
  ...results.map(
    (result) =>
      `| ${result.mode} | ${fixed(result.episodesPerSecond)}${sync !== undefined && result !== sync ? ` (${(result.episodesPerSecond / sync.episodesPerSecond).toFixed(2)}×)` : ''} | ${fixed(result.secondsPerStep, 2)} | ${fixed(result.meanWaitSeconds, 2)} | ${fixed(result.meanUpdateSeconds, 2)} | ${fixed(result.meanStaleness, 2)} | ${fixed(result.timeToTargetSeconds)} s (${result.stepsToTarget ?? '—'})${sync?.timeToTargetSeconds !== undefined && result !== sync && result.timeToTargetSeconds !== undefined ? ` (${(sync.timeToTargetSeconds / result.timeToTargetSeconds).toFixed(2)}×)` : ''} | ${result.exploitabilityBefore.toFixed(3)} → ${result.exploitabilityAfter.toFixed(3)} | ${(100 * result.invalidRateAfter).toFixed(1)}% |`,
  ),
]
await mkdir(join(root, 'bench-results'), { recursive: true })
await writeFile(join(root, 'bench-results', 'collection.json'), `${JSON.stringify({ options, results, loadAverage: loadavg() }, null, 2)}\n`)
await writeFile(join(root, 'bench-results', 'collection.md'), `${lines.join('\n')}\n`)
console.log(lines.join('\n'))
