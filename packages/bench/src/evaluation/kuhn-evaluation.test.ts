import { createByteTokenizer } from '@ludic/core/test'
import { createKuhnTabularPolicy, kuhnConstantPolicy, kuhnExploitability, kuhnNashPolicy } from '@ludic/games'
import { createModel } from '@ludic/model'
import { initTensors } from '@ludic/tensors'
import * as tf from '@tensorflow/tfjs-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { runBenchSuite } from '../bench-suites.js'
import { evaluateKuhn } from './kuhn-evaluation.js'

beforeAll(async () => {
  await initTensors({ backend: 'wasm', verbose: false })
})

describe('evaluateKuhn', () => {
  it('gives the reference policies their exact exploitability', async () => {
    const rows = await evaluateKuhn({})
    const of = (name: string) => rows.find((row) => row.policy === name)!
    expect(of('uniform random').exploitability).toBeCloseTo(kuhnExploitability(kuhnConstantPolicy(0.5)).exploitability, 12)
    expect(of('Nash (α = 0)').exploitability).toBeCloseTo(kuhnExploitability(kuhnNashPolicy(0)).exploitability, 12)
    expect(rows.every((row) => row.method === 'exact')).toBe(true)
  })

  it('samples any PolicyV1: a deterministic tabular player is measured exactly', async () => {
    const tabular = { ...kuhnConstantPolicy(1), '0': 0, '0p': 0, '0pb': 0, '0b': 0 }
    const rows = await evaluateKuhn({ policy: createKuhnTabularPolicy({ policy: tabular, id: 'table' }), samples: 8 })
    const measured = rows.at(-1)!
    expect(measured.policy).toBe('table')
    expect(measured.method).toBe('sampled, 8 per state')
    expect(measured.tabular).toEqual(tabular)
    expect(measured.exploitability).toBeCloseTo(kuhnExploitability(tabular).exploitability, 12)
  })

  it("scores a local model's legal moves exactly, leaving no tensor behind", async () => {
    const tokenizer = createByteTokenizer()
    const model = createModel('tiny', { vocabSize: tokenizer.vocabSize, seed: 1 })
    try {
      const before = tf.memory().numTensors
      const report = await runBenchSuite('kuhn', { model, tokenizer, prompt: 'terse' })
      expect(tf.memory().numTensors).toBe(before)
      const row = report.tables[0]!.rows.at(-1)!
      expect(row[1]).toBe('exact (action log-probabilities)')
      const exploitability = row[2] as number
      expect(exploitability).toBeGreaterThan(0)
      expect(exploitability).toBeLessThan(2)
      expect(model.isDisposed).toBe(false)
    } finally {
      model.dispose()
    }
  })
})
