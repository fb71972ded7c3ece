import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { generatePreferences } from './generate-preferences.js'
import { main, type RewardModelReport } from './main.js'

const directories: string[] = []
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

describe('reward-model example', () => {
  it('generates the committed preference file deterministically', async () => {
    const committed = (await readFile(new URL('../data/preferences.jsonl', import.meta.url), 'utf8')).trim().split('\n')
    const generated = generatePreferences({ count: 2000, seed: 0 })
    expect(committed).toHaveLength(2000)
    expect(committed.slice(0, 50)).toEqual(generated.slice(0, 50).map((pair) => JSON.stringify(pair)))
    expect(committed.at(-1)).toBe(JSON.stringify(generated.at(-1)))
    expect(new Set(generated.map((pair) => JSON.stringify(pair.chosen))).size).toBeGreaterThan(1000) // varied surface text
  })

  it('trains with and without the act-adaptive margin on tiny settings and writes the report', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-reward-model-'))
    directories.push(runDirectory)
    const lines: string[] = []
    const report = await main({
      steps: 25,
      batchSize: 16,
      learningRate: 3e-3,
      seeds: [0],
      pairs: 320,
      vocabSize: 512,
      hiddenSize: 32,
      layers: 1,
      runDirectory,
      backend: 'wasm',
      progress: false,
      log: (line) => lines.push(line),
    })
    expect(report.trainPairs + report.heldOutPairs).toBe(320)
    expect(report.results.map((result) => [result.seed, result.margin])).toEqual([
      [0, 'none'],
      [0, 'act-adaptive'],
    ])
    for (const result of report.results) {
      expect(result.heldOut.pairs).toBe(report.heldOutPairs)
      expect(result.heldOut.accuracy).toBeGreaterThanOrEqual(0)
      expect(result.heldOut.accuracy).toBeLessThanOrEqual(1)
      expect(Number.isFinite(result.heldOut.margin)).toBe(true)
      // Stepping out of the role is learnt within a few updates: far above chance on unseen pairs.
      expect(result.byKind.breaksRole).toBeGreaterThan(0.8)
    }
    const saved = JSON.parse(await readFile(join(runDirectory, 'report.json'), 'utf8')) as RewardModelReport
    expect(saved.meanAccuracy.none).toBeCloseTo(report.results[0]!.heldOut.accuracy, 10)
    expect(saved.backend).toBe('wasm')
    const markdown = await readFile(join(runDirectory, 'report.md'), 'utf8')
    expect(markdown).toContain('| seed | no margin | act-adaptive margin |')
    expect(lines.some((line) => line.startsWith('| 0 |'))).toBe(true)
  })

  it('rejects bad options, naming the field', async () => {
    await expect(main({ steps: 0 })).rejects.toThrow(/steps/)
    await expect(main({ seeds: 'a,b' as never })).rejects.toThrow(/seeds/)
  })
})
