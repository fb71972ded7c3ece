import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { BenchCell, BenchReport } from '../bench-report.js'
import { runBenchSuite } from '../bench-suites.js'
import { benchReportMarkdown } from '../report-markdown.js'

// Smoke runs of the `scale` suite on a tiny checkpoint of the same layout (2 layers, d=64, vocabulary 1024): the
// report's shape, never a timing. Ludic measures in child processes that import the built package (dist/index.js):
// `npm test` builds first.

const cacheDirectory = mkdtempSync(join(tmpdir(), 'ludic-bench-scale-test-'))
afterAll(() => rmSync(cacheDirectory, { recursive: true, force: true, maxRetries: 5 }))

const tiny = {
  backends: ['wasm'],
  layers: 2,
  hiddenSize: 64,
  intermediateSize: 128,
  attentionHeads: 4,
  keyValueHeads: 2,
  headDim: 16,
  vocabSize: 1024,
  decodeBatchSizes: [2],
  quick: true,
  peerThreads: [1],
  cacheDirectory,
}

const cells = (report: BenchReport, column: string): BenchCell[] => {
  const index = report.tables[0]!.columns.indexOf(column)
  expect(index, column).toBeGreaterThanOrEqual(0)
  return report.tables[0]!.rows.map((row) => row[index]!)
}

describe('the scale suite, tiny checkpoint', () => {
  it('without a peer: Ludic builds the checkpoint and measures every work, each ratio says why the peer is missing', async () => {
    const report = await runBenchSuite('scale', { ...tiny, peerPython: '/no/such/python' })
    expect(report.peers['PyTorch + PEFT']!.available).toBe(false)
    const reason = report.peers['PyTorch + PEFT']!.reason
    expect(reason).toMatch(/\/no\/such\/python cannot import torch/)
    expect(cells(report, 'work')).toEqual([
      'load (bf16 safetensors → float32), s',
      'prefill 1 × 128, s',
      'decode batch 2, 4 new tokens, tokens/s',
      'LoRA r=16 on q, v: one AdamW step on 4 × 128 tokens, s',
      'the same LoRA step, Ludic with recomputeLayers, s',
      'peak resident memory of the LoRA step process, GiB',
      'peak resident memory, LoRA step with recomputeLayers, GiB',
    ])
    for (const value of cells(report, 'Ludic wasm')) expect(value).toBeGreaterThan(0)
    for (const value of cells(report, 'wasm vs PyTorch')) expect(value).toBe(`peer unavailable: ${reason}`)
    expect(report.tables[0]!.notes!.join(' ')).toMatch(/built by Ludic .*numTensors unchanged/)
    expect(benchReportMarkdown(report)).toContain('Peak resident memory of each measurement process')
  })

  it('with the peer this machine has (LUDIC_PEER_PYTHON or .venv-peer with transformers and peft): ratios and the same model, or a plain reason', async () => {
    const report = await runBenchSuite('scale', { ...tiny, works: ['prefill', 'lora', 'lora-recompute'], cacheDirectory: join(cacheDirectory, 'peer') })
    const ratios = cells(report, 'wasm vs PyTorch')
    if (report.peers['PyTorch + PEFT']!.available) {
      for (const ratio of ratios) expect(ratio).toBeGreaterThan(0)
      const notes = report.tables[0]!.notes!.join(' ')
      expect(notes).toContain('Checkpoint built by PyTorch')
      const sums = /last logits: wasm (-?\d+(?:\.\d+)?); PyTorch (-?\d+(?:\.\d+)?)/.exec(notes)
      expect(sums, notes).not.toBeNull()
      expect(Number(sums![1])).toBeCloseTo(Number(sums![2]), 1)
      expect(/First LoRA-step loss/.test(notes), notes).toBe(true)
      const losses = /First LoRA-step loss: wasm (-?\d+(?:\.\d+)?); PyTorch (-?\d+(?:\.\d+)?)/.exec(notes)
      expect(Number(losses![1])).toBeCloseTo(Number(losses![2]), 1)
    } else for (const ratio of ratios) expect(ratio).toBe(`peer unavailable: ${report.peers['PyTorch + PEFT']!.reason}`)
  })
})
