import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { kValues, main } from './main.js'
import { createWordTask, parseWordObservation, passAtK, problemsOf, solveWordProblem, wordObservation, wordSplit } from './word-task.js'

const directories: string[] = []
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

/** pass@k by its definition: the share of k-subsets of the n samples holding a correct one (small n only). */
function passAtKByCounting(n: number, c: number, k: number): number {
  let subsets = 0
  let hits = 0
  for (let mask = 0; mask < 2 ** n; mask++) {
    let size = 0
    let hit = false
    for (let sample = 0; sample < n; sample++) {
      if ((mask >> sample) & 1) {
        size++
        if (sample < c) hit = true
      }
    }
    if (size !== k) continue
    subsets++
    if (hit) hits++
  }
  return hits / subsets
}

describe('rl-plus example', () => {
  it('the task: held-out words apart from the training ones, no palindromes, exact rewards; pass@k is the unbiased estimator', () => {
    const { train, test } = wordSplit(0, 40)
    expect(test.length).toBe(40)
    expect(train.length + test.length).toBe(6 ** 3 + 6 ** 4 - 2 * 36)
    expect(train.some((word) => test.includes(word))).toBe(false)
    const problems = problemsOf(['abc'])
    expect(problems.map(solveWordProblem)).toEqual(['abc', 'cba'])
    expect(parseWordObservation(wordObservation(problems[1]!))).toEqual(problems[1])
    const task = createWordTask(problems)
    expect(task.reset(1).observation).toBe('reverse abc')
    expect(task.step(' cba ').rewards).toEqual({ player: 1 })
    task.reset(1)
    expect(task.step('abc').rewards).toEqual({ player: 0 })
    for (const [n, c, k] of [
      [8, 0, 3],
      [8, 1, 1],
      [8, 2, 3],
      [10, 3, 5],
      [10, 7, 4],
    ] as const) {
      expect(passAtK(n, c, k)).toBeCloseTo(passAtKByCounting(n, c, k), 12)
    }
    expect(kValues(64)).toEqual([1, 2, 4, 8, 16, 32, 64])
    expect(kValues(12)).toEqual([1, 2, 4, 8, 12])
  })

  it('runs both methods on two seeds with tiny settings: a table row per seed and method, pass@k curves that never fall, the chart', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-rl-plus-'))
    directories.push(runDirectory)
    const lines: string[] = []
    const report = await main({
      seeds: 2,
      steps: 2,
      sftSteps: 4,
      problemsPerStep: 3,
      groupSize: 2,
      testWords: 3,
      evaluationSamples: 4,
      runDirectory,
      backend: 'wasm',
      progress: false,
      log: (line) => lines.push(line),
    })
    expect(report.results.map((result) => `${result.seed} ${result.method}`)).toEqual(['0 base', '0 grpo', '0 rl-plus', '1 base', '1 grpo', '1 rl-plus'])
    for (const result of report.results) {
      for (const curve of Object.values(result.passAtK)) {
        expect(curve.map((point) => point.k)).toEqual([1, 2, 4])
        curve.forEach((point, index) => {
          expect(point.value).toBeGreaterThanOrEqual(index === 0 ? 0 : curve[index - 1]!.value - 1e-12)
          expect(point.value).toBeLessThanOrEqual(1)
        })
      }
      expect(result.trainReward === undefined).toBe(result.method === 'base')
      // The demonstrations, replayed through the environment, are verified correct.
      expect(result.demonstrationReward).toBe(result.method === 'rl-plus' ? 1 : undefined)
    }
    // 2 header lines, 6 runs, 3 means.
    expect(report.table.length).toBe(11)
    expect(report.table[0]).toContain('reverse pass@4')
    expect(await readFile(join(runDirectory, 'table.md'), 'utf8')).toBe(`${report.table.join('\n')}\n`)
    const chart = await readFile(join(runDirectory, 'chart.svg'), 'utf8')
    expect(chart).toContain('rl-plus')
    expect(chart).toContain('reverse')
    expect(JSON.parse(await readFile(join(runDirectory, 'report.json'), 'utf8')).results.length).toBe(6)
    expect(lines.at(-1)).toMatch(/report.json, table.md and chart.svg/)
  })
})
