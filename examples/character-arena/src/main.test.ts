import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { main as trainCpo } from '@ludic/example-roleplay-cpo'
import { characterPrompt, characters } from '@ludic/example-roleplay-cpo/setup'
import { afterAll, describe, expect, it } from 'vitest'
import { createCardLineBaseline, main } from './main.js'

const directories: string[] = []
const temporary = async (prefix: string) => {
  const directory = await mkdtemp(join(tmpdir(), prefix))
  directories.push(directory)
  return directory
}
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

describe('character-arena', () => {
  it('rates the start, middle and end models of a CPO run and the baseline: report, table, judgements and chart', async () => {
    const cpoRun = await temporary('ludic-arena-cpo-')
    // The arena needs three saved models, not good ones: one warm-up step (each one most of this test's time).
    await trainCpo({
      steps: 2,
      sftSteps: 1,
      episodesPerStep: 4,
      groupSize: 2,
      miniBatchSize: 8,
      maxTokens: 8,
      evaluateEvery: 2,
      evaluationEpisodes: 4,
      vocabSize: 400,
      checkpointEvery: 0,
      runDirectory: cpoRun,
      backend: 'wasm',
      progress: false,
      log: () => {},
    })
    const runDirectory = await temporary('ludic-arena-')
    const lines: string[] = []
    const report = await main({ cpoRun, contexts: 5, bootstrapSamples: 50, runDirectory, backend: 'wasm', log: (line) => lines.push(line) })
    expect(report.competitors).toEqual(['start', 'middle', 'end', 'baseline'])
    expect(report.failures).toBe(0)
    // 6 pairs × 5 contexts, each judged in both orders.
    const judgements = (await readFile(join(runDirectory, 'judgements.jsonl'), 'utf8')).trim().split('\n')
    expect(judgements).toHaveLength(60)
    const standings = report.arena.standings
    expect(standings.map((standing) => standing.player).sort()).toEqual(['baseline', 'end', 'middle', 'start'])
    for (const standing of standings) {
      expect(standing.interval[0]).toBeLessThanOrEqual(standing.rating)
      expect(standing.interval[1]).toBeGreaterThanOrEqual(standing.rating)
      expect(standing.games).toBe(15)
    }
    const table = await readFile(join(runDirectory, 'arena.md'), 'utf8')
    expect(table).toMatch(/\| Rank \| Player \| Rating \| 95% interval \|/)
    const chart = await readFile(join(runDirectory, 'chart.svg'), 'utf8')
    for (const name of report.competitors) expect(chart).toContain(name)
    expect(lines.join('\n')).toContain('baseline')
  })

  it('the baseline answers in character with its own card lines, the same for the same seed', async () => {
    const baseline = createCardLineBaseline(3)
    const character = characters[0]!
    const request = {
      messages: [
        { role: 'system' as const, content: characterPrompt(character) },
        { role: 'user' as const, content: 'Hello?' },
      ],
      maxTokens: 8,
      seed: 5,
    }
    const [first] = await baseline.generate([request])
    const [again] = await baseline.generate([request])
    expect(character.sampleLines).toContain(first!.text)
    expect(again!.text).toBe(first!.text)
  })
})
