import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createGame24, game24NextSteps, solveGame24 } from '@ludic/games'
import { afterAll, describe, expect, it } from 'vitest'
import { bootstrapInterval, passAtK, seedInterval } from './diversity-evaluation.js'
import { failureLogReward, game24Prompt, game24Task, promptOfView, chatTemplate, solutionTrajectories, successLogReward } from './game24-setup.js'
import { main, mainOptionsSchema, methods } from './main.js'

const directories: string[] = []
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

/** pass@k by enumeration: the share of k-subsets of n samples (c correct) holding a correct one. */
function passAtKByEnumeration(n: number, c: number, k: number): number {
  let hits = 0
  let subsets = 0
  for (let mask = 0; mask < 1 << n; mask++) {
    let size = 0
    let correct = false
    for (let bit = 0; bit < n; bit++) {
      if (mask & (1 << bit)) {
        size++
        if (bit < c) correct = true
      }
    }
    if (size !== k) continue
    subsets++
    if (correct) hits++
  }
  return hits / subsets
}

describe('game24-diversity', () => {
  it('the task: GRPO reads the same prompt as FoR, the allowed actions are the valid steps, and the walk finds every solution', () => {
    const environment = createGame24({ problems: [[4, 7, 8, 8]] })
    const first = environment.reset(0)
    expect(chatTemplate(promptOfView(first))).toBe(game24Prompt([4, 7, 8, 8], []))
    const outcome = environment.step('8 / 8 = 1')
    expect(outcome.done).toBe(false)
    const second = chatTemplate(promptOfView(outcome.done ? first : outcome.next!))
    expect(second).toBe('4 7 8 8\n8 / 8 = 1\nleft: 4 7 1\n>')
    expect(game24Task.allowedActions([4, 7, 8, 8], [])).toEqual(game24NextSteps([4, 7, 8, 8]))
    expect(game24Task.logReward([4, 7, 8, 8], ['8 / 8 = 1', '7 - 1 = 6', '6 * 4 = 24'])).toBeCloseTo(successLogReward)
    expect(game24Task.logReward([4, 7, 8, 8], ['8 / 8 = 1', '7 - 1 = 6', '6 + 4 = 10'])).toBeCloseTo(failureLogReward)
    expect(game24Task.allowedActions([4, 7, 8, 8], ['8 / 8 = 1', '7 - 1 = 6', '6 + 4 = 10'])).toEqual([])
    const solutions = solutionTrajectories([4, 7, 8, 8])
    expect([...solutions.keys()].sort()).toEqual([...solveGame24([4, 7, 8, 8])].sort())
    for (const orders of solutions.values()) for (const steps of orders) expect(game24Task.solved([4, 7, 8, 8], steps)).toBe(true)
  })

  it('pass@k is the unbiased estimator (checked by enumeration), and the intervals hold their mean', () => {
    for (const [n, c, k] of [
      [8, 0, 1],
      [8, 3, 1],
      [8, 3, 4],
      [10, 2, 5],
      [6, 6, 2],
    ] as const) {
      expect(passAtK(n, c, k)).toBeCloseTo(passAtKByEnumeration(n, c, k), 10)
    }
    expect(passAtK(16, 4, 1)).toBeCloseTo(0.25, 12)
    const seeds = seedInterval([0.2, 0.3, 0.4])
    expect(seeds.mean).toBeCloseTo(0.3)
    expect(seeds.high - seeds.mean).toBeCloseTo(4.303 * Math.sqrt(0.01 / 3), 3)
    const problems = bootstrapInterval([0, 1, 0, 1, 1, 0, 0, 1], 0)
    expect(problems.low).toBeLessThan(0.5)
    expect(problems.high).toBeGreaterThan(0.5)
  })

  it('runs the comparison with tiny settings: every method and seed, matched training samples, table and chart', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-game24-diversity-'))
    directories.push(runDirectory)
    const lines: string[] = []
    const report = await main({
      steps: 2,
      sftSteps: 3,
      seeds: 2,
      trainingProblems: 3,
      sftProblems: 20,
      evaluationEpisodes: 3,
      evaluationSamples: 4,
      hiddenSize: 16,
      vocabSize: 300,
      runDirectory,
      backend: 'wasm',
      progress: false,
      log: (line) => lines.push(line),
    })
    expect(report.runs.map((entry) => `${entry.method}:${entry.seed}`)).toEqual([
      'SFT-only:0',
      'GRPO (free text):0',
      'GRPO (valid steps):0',
      'FoR:0',
      'SFT-only:1',
      'GRPO (free text):1',
      'GRPO (valid steps):1',
      'FoR:1',
    ])
    for (const entry of report.runs) {
      expect(entry.problems).toHaveLength(3)
      const curve = [1, 2, 4].map((k) => entry.summary.passAtK[k]!)
      for (let index = 1; index < curve.length; index++) expect(curve[index]!).toBeGreaterThanOrEqual(curve[index - 1]!)
      for (const problem of entry.problems) {
        expect(problem.distinctSolutions).toBeLessThanOrEqual(problem.distinctTrajectories)
        expect(problem.distinctTrajectories).toBeLessThanOrEqual(problem.correct)
      }
    }
    // The same budget: GRPO and FoR train on steps × samplesPerProblem sampled-or-replayed trajectories (FoR adds local search's).
    for (const entry of report.runs.filter((run) => run.method.startsWith('GRPO'))) expect(entry.trajectoriesTrainedOn).toBe(2 * 4)
    for (const entry of report.runs.filter((run) => run.method === 'FoR')) {
      expect(entry.trajectoriesTrainedOn).toBeGreaterThanOrEqual(2 * 4)
      expect(entry.freshSamples).toBeLessThanOrEqual(2 * 4)
    }
    expect(Object.keys(report.comparison.methods)).toEqual([...methods])
    const table = await readFile(join(runDirectory, 'table.md'), 'utf8')
    expect(table).toContain('| FoR − GRPO (valid steps) |')
    expect(table).toMatch(/\| FoR \| 1 \| [\d.]+ \|/)
    expect(await readFile(join(runDirectory, 'chart.svg'), 'utf8')).toContain('distinct correct solutions per problem')
    const saved = JSON.parse(await readFile(join(runDirectory, 'report.json'), 'utf8'))
    expect(saved.runs).toHaveLength(8)
    expect(lines.at(-1)).toMatch(/report\.json, table\.md and chart\.svg/)
  })

  it('refuses the shared options it does not use, naming each, before any work', async () => {
    for (const [name, value] of [
      ['temperature', 1.5],
      ['klFinalRatio', 0.5],
      ['klEstimator', 'k1'],
      ['klReferenceEvery', 10],
      ['klReferenceMixup', 0.5],
      ['evaluateEvery', 5],
      ['checkpointEvery', 10],
    ] as const) {
      await expect(main({ [name]: value, backend: 'cpu' })).rejects.toThrow(new RegExp(`options\\.${name}.*does not use it`))
    }
    await expect(main({ evaluationEpisodes: 101, backend: 'cpu' })).rejects.toThrow(/options\.evaluationEpisodes.*holds 100 problems/)
    expect(mainOptionsSchema.parse({ evaluationEpisodes: 100 }).evaluationEpisodes).toBe(100)
    expect(mainOptionsSchema.parse({}).temperature).toBe(1)
  })
})
