import { ParseError } from '@ludic/core'
import * as tf from '@tensorflow/tfjs-core'
import { describe, expect, it } from 'vitest'
import { runBenchSuite } from '../bench-suites.js'
import { runTransfer, transferTable } from './transfer.js'

describe('runTransfer', () => {
  it('trains on one set, evaluates every game against the baseline, marks the held-out games, leaves no tensor behind', async () => {
    const tiny = {
      trainOn: [['kuhn-poker-v1']],
      evaluateOn: ['kuhn-poker-v1', 'iterated-prisoners-dilemma-v0'],
      steps: 1,
      episodesPerStep: 2,
      sftSteps: 2,
      sftBatchSize: 8,
      warmupEpisodes: 2,
      sftExamplesPerGame: 16,
      evaluationEpisodes: 4,
      vocabSize: 300,
      backend: 'wasm',
    }
    const first = await runTransfer(tiny)
    const tensors = tf.memory().numTensors
    expect(first.rows.map((row) => [row.trainedOn, row.game, row.heldOut])).toEqual([
      ['kuhn-poker-v1', 'kuhn-poker-v1', false],
      ['kuhn-poker-v1', 'iterated-prisoners-dilemma-v0', true],
    ])
    for (const row of first.rows) {
      expect(row.difference).toBeCloseTo(row.trained.winRate - row.baseline.winRate, 12)
      for (const figures of [row.baseline, row.trained]) {
        expect(figures.episodes).toBe(4)
        expect(figures.winRateInterval[0]).toBeLessThanOrEqual(figures.winRate)
        expect(figures.winRate).toBeLessThanOrEqual(figures.winRateInterval[1])
      }
    }
    expect(first.trainingInvalidRate['kuhn-poker-v1']).toHaveLength(1)
    const table = transferTable(first)
    expect(table.columns).toContain('difference')
    expect(table.rows[1]![2]).toBe('yes')
    // Seeded: the same table again, and the tensors of the run are all freed.
    const second = await runTransfer(tiny)
    expect(second.rows).toEqual(first.rows)
    expect(tf.memory().numTensors).toBe(tensors)
  })

  it('refuses unknown games and a game named twice in a set, by option', async () => {
    await expect(runBenchSuite('transfer', { trainOn: [['kuhn-poker-v1', 'kuhn-poker-v1']], backend: 'wasm' })).rejects.toThrow(/trainOn\.0/)
    await expect(runBenchSuite('transfer', { evaluateOn: ['nope-v0'], backend: 'wasm' })).rejects.toThrow(/not a registered game/)
    await expect(runBenchSuite('transfer', { steps: -1 })).rejects.toSatisfy(ParseError.isInstance)
  })
})
