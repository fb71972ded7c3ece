import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createRoleRloo, main } from './main.js'

const directories: string[] = []
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

const outcome = (length: number, reward: number) => {
  const rewards = new Float32Array(length)
  rewards[length - 1] = reward
  return rewards
}

describe('kuhn-estimator-comparison', () => {
  it('role-rloo: leave-one-out per (group, role), one advantage per episode on all its turns', () => {
    // Group g, 3 plays; player0 wins, loses, wins (its first play has two turns: rewards on the last).
    const { advantages } = createRoleRloo().estimate({
      tokenRewards: [outcome(2, 0), outcome(2, 1), outcome(3, -1), outcome(2, -1), outcome(2, 1), outcome(2, 1), outcome(1, -1)],
      groupIds: ['g', 'g', 'g', 'g', 'g', 'g', 'g'],
      roles: ['player0', 'player0', 'player1', 'player0', 'player1', 'player0', 'player1'],
      trajectoryIds: ['a', 'a', 'a', 'b', 'b', 'c', 'c'],
    })
    const firstToken = advantages.map((row) => row[0])
    // player0 returns 1, −1, 1: 1 − (−1 + 1)/2 = 1; −1 − (1 + 1)/2 = −2. player1 returns −1, 1, −1: −1 − 0 = −1; 1 + 1 = 2.
    expect(firstToken).toEqual([1, 1, -1, -2, 2, 1, -1])
    expect(advantages[2]).toEqual(new Float32Array([-1, -1, -1]))
  })

  it('runs the Kuhn self-play once per estimator with tiny settings and writes the comparison', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-kuhn-estimator-comparison-'))
    directories.push(runDirectory)
    const lines: string[] = []
    const comparison = await main({
      steps: 2,
      sftSteps: 5,
      episodesPerStep: 4,
      groupSize: 2,
      miniBatchSize: 16,
      evaluateEvery: 1,
      evaluationEpisodes: 8,
      runDirectory,
      backend: 'wasm',
      progress: false,
      log: (line) => lines.push(line),
    })
    expect(comparison.rows.map((row) => row.estimator)).toEqual(['rae', 'rloo', 'role-rloo'])
    for (const row of comparison.rows) {
      for (const value of [row.exploitabilityBefore, row.exploitabilityAfter]) expect(value).toBeGreaterThanOrEqual(0)
      for (const value of [row.winRateBefore, row.winRateAfter, row.invalidRateAfter]) expect(value).toBeGreaterThanOrEqual(0)
      expect(row.seconds).toBeGreaterThan(0)
      expect(row.backend).toBe('wasm')
      const report = JSON.parse(await readFile(join(runDirectory, row.estimator, 'report.json'), 'utf8')) as {
        options: { advantage: string; groupSize: number }
        after: { step: number }
      }
      expect(report.options.advantage).toBe(row.estimator)
      expect(report.options.groupSize).toBe(2)
      expect(report.after.step).toBe(2)
      const metrics = (await readFile(join(runDirectory, row.estimator, 'metrics.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, number>)
      expect(metrics.map((record) => record.step)).toEqual([1, 2])
      expect(metrics[0]!.episodes).toBe(8) // 4 deals × 2 plays
    }
    const saved = JSON.parse(await readFile(join(runDirectory, 'comparison.json'), 'utf8')) as { rows: unknown[] }
    expect(saved.rows).toHaveLength(3)
    expect(await readFile(join(runDirectory, 'chart.svg'), 'utf8')).toContain('role-rloo')
    expect(lines.some((line) => line.startsWith('| rloo |'))).toBe(true)
  })
})
