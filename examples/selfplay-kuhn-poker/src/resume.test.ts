import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

/**
 * A run killed mid-step resumes from its last checkpoint with nothing lost. The example runs as a child
 * process (`node --import tsx src/main.ts`, in this folder, so on the built packages), is killed with
 * SIGKILL once `checkpoint-2` exists (during step 3 or its checkpoint), then runs again on the same
 * directory to the end; its metrics and evaluations must equal those of an uninterrupted run.
 */
const exampleDirectory = join(dirname(fileURLToPath(import.meta.url)), '..')
const tiny = [
  '--steps',
  '4',
  '--checkpoint-every',
  '1',
  '--sft-steps',
  '10',
  '--episodes-per-step',
  '8',
  '--mini-batch-size',
  '16',
  '--evaluate-every',
  '1',
  '--evaluation-episodes',
  '8',
  '--backend',
  'wasm',
  '--progress',
  'false',
]
/** Fields that measure time, not what was computed. */
const timing = new Set(['seconds', 'tokensPerSecond', 'rolloutSeconds', 'updateSeconds'])

const directories: string[] = []
const children: ChildProcess[] = []
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  for (const directory of directories) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

interface Ended {
  code: number | null
  signal: NodeJS.Signals | null
  output: string
}

/** Runs the example on `runDirectory`; `killWhen` is polled every 20 ms and, once true, the process gets SIGKILL. */
function runExample(runDirectory: string, recipe: readonly string[], killWhen?: () => boolean): Promise<Ended & { killed: boolean }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...tiny, ...recipe, '--run-directory', runDirectory], {
    cwd: exampleDirectory,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  let killed = false
  const poll =
    killWhen === undefined
      ? undefined
      : setInterval(() => {
          if (!killed && killWhen()) {
            killed = child.kill('SIGKILL')
          }
        }, 20)
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => {
      if (poll !== undefined) clearInterval(poll)
      resolve({ code, signal, output, killed })
    })
  })
}

const readMetrics = async (runDirectory: string) =>
  (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, number>)
const withoutTiming = (record: Record<string, unknown>) => Object.fromEntries(Object.entries(record).filter(([name]) => !timing.has(name)))

interface SavedReport {
  before: Record<string, number>
  after: Record<string, number>
  evaluations: Record<string, number>[]
}

/** The default recipe (RAE), and PPO with GAE and a separate critic (its weights and optimizer are checkpointed too). */
const recipes: Record<string, readonly string[]> = { rae: [], 'gae + separate critic': ['--advantage', 'gae', '--critic', 'separate'] }

describe.each(Object.entries(recipes))('selfplay-kuhn-poker: resume (%s)', (_, recipe) => {
  it('a run killed mid-step resumes from its last checkpoint with nothing lost', async () => {
    const uninterrupted = await mkdtemp(join(tmpdir(), 'ludic-kuhn-whole-'))
    const interrupted = await mkdtemp(join(tmpdir(), 'ludic-kuhn-killed-'))
    directories.push(uninterrupted, interrupted)

    const whole = await runExample(uninterrupted, recipe)
    expect(whole.code, whole.output).toBe(0)

    // Killed once checkpoint-2 exists: step 3 (or the checkpoint after it) is under way.
    const first = await runExample(interrupted, recipe, () => existsSync(join(interrupted, 'checkpoint-2')))
    expect(first.killed, `the run ended before checkpoint-2 appeared:\n${first.output}`).toBe(true)
    expect(first.signal).toBe('SIGKILL')
    expect(existsSync(join(interrupted, 'report.json'))).toBe(false)
    expect((await readMetrics(interrupted)).length).toBeLessThan(4)

    const second = await runExample(interrupted, recipe)
    expect(second.code, second.output).toBe(0)
    expect(second.output).toContain('(resuming)')

    const expected = await readMetrics(uninterrupted)
    const resumed = await readMetrics(interrupted)
    expect(expected.map((record) => record.step)).toEqual([1, 2, 3, 4])
    expect(resumed.map((record) => record.step)).toEqual([1, 2, 3, 4])
    expect(resumed.map(withoutTiming)).toEqual(expected.map(withoutTiming))

    const expectedReport = JSON.parse(await readFile(join(uninterrupted, 'report.json'), 'utf8')) as SavedReport
    const resumedReport = JSON.parse(await readFile(join(interrupted, 'report.json'), 'utf8')) as SavedReport
    expect(expectedReport.evaluations.map((evaluation) => evaluation.step)).toEqual([0, 1, 2, 3, 4])
    expect(resumedReport.before).toEqual(expectedReport.before)
    expect(resumedReport.after).toEqual(expectedReport.after)
    expect(resumedReport.evaluations).toEqual(expectedReport.evaluations)
  })
})

describe('selfplay-kuhn-poker: resume in rounds (--rounds)', () => {
  const rounds = ['--rounds', '2', '--round-steps', '3', '--distil-steps', '2', '--distil-examples-per-decision', '3']
  interface RoundsReport extends SavedReport {
    rounds: { round: number; evaluations: Record<string, number>[]; distilled: Record<string, number>; own?: unknown; average: { rounds?: number[] } }[]
  }
  const readReport = async (runDirectory: string) => JSON.parse(await readFile(join(runDirectory, 'report.json'), 'utf8')) as RoundsReport
  /** The report without what measures time (the distillations' seconds). */
  const computed = (report: RoundsReport) => ({
    evaluations: report.evaluations,
    after: report.after,
    rounds: report.rounds.map((round) => ({ ...round, distilled: withoutTiming(round.distilled) })),
  })

  it('a run killed in its second round resumes there; one whose second round left nothing starts it again from the first round’s distilled average', async () => {
    const uninterrupted = await mkdtemp(join(tmpdir(), 'ludic-kuhn-rounds-whole-'))
    const interrupted = await mkdtemp(join(tmpdir(), 'ludic-kuhn-rounds-killed-'))
    const restarted = await mkdtemp(join(tmpdir(), 'ludic-kuhn-rounds-restarted-'))
    directories.push(uninterrupted, interrupted, restarted)
    const whole = await runExample(uninterrupted, rounds)
    expect(whole.code, whole.output).toBe(0)
    const expected = await readReport(uninterrupted)
    expect(expected.rounds.map((round) => round.round)).toEqual([1, 2])
    expect(expected.evaluations.map((evaluation) => evaluation.step)).toEqual([0, 1, 2, 3, 4, 5, 6, 7])

    // Killed once the second round has its first checkpoint: it resumes from it (its KL reference from `reference/`).
    for (const directory of [interrupted, restarted]) {
      const first = await runExample(directory, rounds, () => existsSync(join(directory, 'round-2', 'checkpoint-1')))
      expect(first.killed, `the run ended before round-2/checkpoint-1 appeared:\n${first.output}`).toBe(true)
      expect(existsSync(join(directory, 'round.json'))).toBe(true)
      expect(existsSync(join(directory, 'report.json'))).toBe(false)
    }
    // As if killed before the second round's first checkpoint (its reference and first metrics written, no checkpoint): it
    // starts again from round 1's distilled model.
    for (const entry of await readdir(join(restarted, 'round-2'))) {
      if (entry.startsWith('checkpoint-')) await rm(join(restarted, 'round-2', entry), { recursive: true, force: true })
    }
    expect(existsSync(join(restarted, 'round-2', 'reference'))).toBe(true)

    for (const directory of [interrupted, restarted]) {
      const second = await runExample(directory, rounds)
      expect(second.code, second.output).toBe(0)
      expect(computed(await readReport(directory))).toEqual(computed(expected))
      const roundTwo = async (runDirectory: string) =>
        (await readFile(join(runDirectory, 'round-2', 'metrics.jsonl'), 'utf8'))
          .trim()
          .split('\n')
          .map((line) => withoutTiming(JSON.parse(line) as Record<string, number>))
      expect(await roundTwo(directory)).toEqual(await roundTwo(uninterrupted))
    }
  })

  it('a finished running-last run continued with a round more equals the longer run: its former last round is redone as a middle one', async () => {
    const lastRunning = (count: number) => [
      '--rounds',
      String(count),
      '--round-steps',
      '3',
      '--distil-steps',
      '2',
      '--distil-examples-per-decision',
      '3',
      '--round-average',
      'running-last',
    ]
    const longer = await mkdtemp(join(tmpdir(), 'ludic-kuhn-running-last-whole-'))
    const continued = await mkdtemp(join(tmpdir(), 'ludic-kuhn-running-last-continued-'))
    directories.push(longer, continued)
    const whole = await runExample(longer, lastRunning(3))
    expect(whole.code, whole.output).toBe(0)
    const short = await runExample(continued, lastRunning(2))
    expect(short.code, short.output).toBe(0)
    // Two rounds: the second, then the last, distilled the running average (of round 2 alone) and kept its own beside it.
    const first = await readReport(continued)
    expect(first.rounds[1]!.average.rounds).toEqual([2])
    expect(first.rounds[1]!.own).toBeDefined()
    const more = await runExample(continued, lastRunning(3))
    expect(more.code, more.output).toBe(0)
    const report = await readReport(continued)
    expect(report.rounds[1]!.own).toBeUndefined() // now a middle round: its own average, as in the longer run
    expect(report.rounds[2]!.average.rounds).toEqual([2, 3])
    expect(computed(report)).toEqual(computed(await readReport(longer)))
  })
})
