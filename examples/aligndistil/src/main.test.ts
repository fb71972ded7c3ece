import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { type AlignDistilReport, arms, main } from './main.js'
import { followsRule, generateRulePairs } from './synthetic-preferences.js'

const directories: string[] = []
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

describe('synthetic preferences', () => {
  it('are deterministic minimal pairs: the chosen reply follows the rule, the rejected one breaks it one way', () => {
    const pairs = generateRulePairs(400, 7)
    expect(generateRulePairs(400, 7)).toEqual(pairs)
    expect(generateRulePairs(400, 8)).not.toEqual(pairs)
    for (const pair of pairs) {
      expect(pair.prompt).toContain(pair.object)
      expect(followsRule(pair, pair.chosen)).toBe(true)
      expect(followsRule(pair, pair.rejected)).toBe(false)
      expect(pair.rejected.trimEnd().endsWith('?')).toBe(pair.kind === 'wrong-object')
    }
    expect(pairs.filter((pair) => pair.kind === 'wrong-object')).toHaveLength(200)
    expect(new Set(pairs.map((pair) => pair.chosen)).size).toBeGreaterThan(300) // varied surface text
  })
})

describe('aligndistil example', () => {
  it('runs the three arms on tiny settings and writes the report, the tables and the chart', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-aligndistil-'))
    directories.push(runDirectory)
    const lines: string[] = []
    const report = await main({
      steps: 12,
      teacherSteps: 4,
      evaluateEvery: 4,
      batchSize: 8,
      seeds: [0, 1],
      trainPairs: 160,
      heldOutPairs: 40,
      sftSteps: 20,
      vocabSize: 320,
      hiddenSize: 16,
      layers: 1,
      runDirectory,
      backend: 'wasm',
      progress: false,
      log: (line) => lines.push(line),
    })
    expect(report.results.map((result) => result.seed)).toEqual([0, 1])
    for (const result of report.results) {
      // Before any preference update the policy is its reference: every pair a tie.
      for (const arm of arms) expect(result.curves[arm][0]).toEqual({ step: 0, accuracy: 0.5, byKind: { 'wrong-object': 0.5, 'no-question': 0.5 } })
      expect(result.curves.dpo.map((point) => point.step)).toEqual([0, 4, 8, 12])
      expect(result.curves.aligndistil.map((point) => point.step)).toEqual([0, 4, 8, 12])
      expect(result.curves['aligndistil-counted'].map((point) => point.step)).toEqual([0, 8, 12])
      expect(result.curves['aligndistil-counted'][1]!.accuracy).toBe(0.5) // the policy waits while its teachers train
      // Twelve DPO updates already tell the rule's halves apart on unseen pairs: the ending is learnt first.
      expect(result.curves.dpo.at(-1)!.byKind['no-question']).toBeGreaterThan(0.75)
      expect(result.curves.aligndistil.at(-1)!.accuracy).not.toBe(0.5) // the student moved
    }
    const mean = (arm: (typeof arms)[number], step: number) =>
      report.results.reduce((total, result) => total + result.curves[arm].find((point) => point.step === step)!.accuracy, 0) / report.results.length
    expect(report.summary.dpo.find((point) => point.step === 12)!.mean).toBeCloseTo(mean('dpo', 12), 12)
    expect(report.summary['aligndistil-counted'].map((point) => point.step)).toEqual([0, 8, 12])
    const saved = JSON.parse(await readFile(join(runDirectory, 'report.json'), 'utf8')) as AlignDistilReport
    expect(saved.summary).toEqual(report.summary)
    expect(saved.backend).toBe('wasm')
    const markdown = await readFile(join(runDirectory, 'report.md'), 'utf8')
    expect(markdown).toContain('| gradient steps | dpo |')
    expect(markdown).toContain('| 12 |')
    expect(await readFile(join(runDirectory, 'chart.svg'), 'utf8')).toContain('gradient steps')
    expect(lines.some((line) => line.startsWith('seed 1: final held-out accuracy'))).toBe(true)
  })

  it('rejects bad options, naming the field', async () => {
    await expect(main({ steps: 0 })).rejects.toThrow(/steps/)
    await expect(main({ seeds: 'a,b' as never })).rejects.toThrow(/seeds/)
    await expect(main({ steps: 10, teacherSteps: 5 })).rejects.toThrow(/teacherSteps/)
  })
})
