import { describe, expect, it } from 'vitest'
import type { BenchCell, BenchReport } from '../bench-report.js'
import { runBenchSuite } from '../bench-suites.js'
import { benchReportMarkdown } from '../report-markdown.js'
import { benchDocuments } from './tokenizer-suite.js'

// Smoke runs of the speed suites with their smallest options: the report's shape, never a timing. The model and
// kernel suites measure in child processes that run the built entry (dist/perf-child.js): `npm test` builds first.

const column = (report: BenchReport, name: string, table = 0): BenchCell[] => {
  const index = report.tables[table]!.columns.indexOf(name)
  expect(index, `column ${name}`).toBeGreaterThanOrEqual(0)
  return report.tables[table]!.rows.map((row) => row[index]!)
}

describe('the speed suites, smallest options', () => {
  it('tokenizer: ratios against the peers that load, "peer unavailable: <why>" for those that do not', async () => {
    const report = await runBenchSuite('tokenizer', { tokenizers: ['qwen3', '/no/such/tokenizer.json'], quick: true, documentBytes: 2000 })
    expect(report.suite).toBe('tokenizer')
    expect(report.tables[0]!.notes!.join(' ')).toMatch(/\/no\/such\/tokenizer\.json: not measured/)
    const peers = [
      ['@huggingface/tokenizers', 'ours warm / @huggingface/tokenizers', 'ids vs @huggingface/tokenizers'],
      ['tokenizers (Rust, native)', 'ours warm / tokenizers (Rust)', 'ids vs tokenizers (Rust)'],
    ] as const
    for (const [peer, ratio, ids] of peers) {
      const [cell] = column(report, ratio)
      if (report.peers[peer]!.available) {
        expect(report.peers[peer]!.version).toMatch(/^\d+\.\d+\.\d+/)
        expect(cell).toBeGreaterThan(0)
        expect(column(report, ids)).toEqual(['identical'])
      } else expect(cell).toBe(`peer unavailable: ${report.peers[peer]!.reason}`)
    }
    expect(column(report, 'implementation', 1)).toContain('ours (cold cache)')
    expect(benchReportMarkdown(report)).toContain('## Ours / peer, MB/s ratio')
  })

  it('tokenizer: a tokenizer that caches nothing (Llama 2: no pre-tokenizer) gets no cold figure, which would be warm again', async () => {
    const report = await runBenchSuite('tokenizer', { tokenizers: ['llama2'], quick: true, documentBytes: 2000 })
    expect(column(report, 'ours cold / @huggingface/tokenizers')).toEqual(['as warm: no word cache'])
    expect(column(report, 'ours cold / tokenizers (Rust)')).toEqual(['as warm: no word cache'])
    expect(column(report, 'implementation', 1)).not.toContain('ours (cold cache)')
    expect(report.tables[0]!.notes!.join(' ')).toContain('llama2: no word cache')
  })

  it('tokenizer: the documents have a long tail of words, so a cold cache meets many it has not seen', () => {
    // Without made-up words the three 100 kB documents held 227, 354 and 318 distinct words: a cold cache was warm
    // again after their first kilobytes, and cold measured the same work as warm.
    for (const document of benchDocuments(100_000)) expect(new Set(document.text.split(/\s+/)).size, document.name).toBeGreaterThan(600)
    expect(benchDocuments(5000)).toEqual(benchDocuments(5000)) // seeded
  })

  /** The smallest train-step run: one `tiny` step of 2 × 8 tokens on WebAssembly. */
  const quickTrainStep = {
    presets: ['tiny' as const],
    backends: ['wasm' as const],
    quick: true,
    repetitions: 1,
    batchSize: 2,
    sequenceLength: 8,
    vocabSize: 64,
  }

  it('train-step: the backend measured, the ratio column says why when the peer cannot run', async () => {
    const report = await runBenchSuite('train-step', {
      ...quickTrainStep,
      peerPython: '/no/such/python',
    })
    expect(report.peers.PyTorch!.available).toBe(false)
    expect(report.peers.PyTorch!.reason).toMatch(/\/no\/such\/python cannot import torch/)
    expect(column(report, 'wasm tokens/s')[0]).toBeGreaterThan(0)
    expect(column(report, 'wasm / PyTorch')[0]).toBe(`peer unavailable: ${report.peers.PyTorch!.reason}`)
    expect(column(report, 'wasm loss before step 1')[0]).toBeGreaterThan(0)
    expect(report.tables[0]!.notes!.join(' ')).toContain('numTensors unchanged')
    expect(report.tables[0]!.notes!.join(' ')).toMatch(/wasm: CPU \(WebAssembly[^)]*\), 1 thread\(s\), AdamW as composed TensorFlow.js ops;/)
  })

  it("train-step with fusedOptimizer: true on WebAssembly: that backend's column names the refused option", async () => {
    const report = await runBenchSuite('train-step', {
      ...quickTrainStep,
      peerPython: '/no/such/python',
      fusedOptimizer: true,
    })
    expect(column(report, 'wasm tokens/s')[0]).toMatch(/^not measured: .*'options\.fused' \(value: true\).*needs the native TensorFlow backend/)
  })

  it('train-step with the peer this machine has (LUDIC_PEER_PYTHON or .venv-peer): the same first loss, or a plain reason', async () => {
    const report = await runBenchSuite('train-step', {
      ...quickTrainStep,
      peerThreads: [1],
    })
    const [ratio] = column(report, 'wasm / PyTorch')
    if (report.peers.PyTorch!.available) {
      expect(ratio).toBeGreaterThan(0)
      expect(column(report, 'PyTorch loss before step 1')[0]).toBeCloseTo(column(report, 'wasm loss before step 1')[0] as number, 3)
    } else expect(ratio).toBe(`peer unavailable: ${report.peers.PyTorch!.reason}`)
  })

  it('decode: tokens/s per backend, a missing backend and the peer named', async () => {
    const report = await runBenchSuite('decode', {
      presets: ['tiny'],
      backends: ['wasm', 'tensorflow'],
      batchSizes: [2],
      promptLength: 4,
      newTokens: 3,
      vocabSize: 64,
      quick: true,
      peerPython: '/no/such/python',
    })
    expect(column(report, 'wasm tokens/s')[0]).toBeGreaterThan(0)
    const [tensorflow] = column(report, 'tensorflow tokens/s')
    if (typeof tensorflow === 'string') expect(tensorflow).toMatch(/^not measured: /)
    expect(column(report, 'wasm / PyTorch')[0]).toMatch(/^peer unavailable: /)
  })

  it('kernels: stock and fixed wasm kernels side by side, the acceptance ratios', async () => {
    const report = await runBenchSuite('kernels', { backends: ['wasm'], quick: true })
    expect(report.peers['tfjs-backend-wasm stock kernels']!.available).toBe(true)
    for (const ratio of column(report, 'wasm after / before')) expect(ratio).toBeGreaterThan(0)
    expect(column(report, 'result', 1).every((result) => result === 'PASS' || result === 'FAIL')).toBe(true)
  })

  it('collection: synchronous and asynchronous collection, the ratio against sync', async () => {
    const report = await runBenchSuite('collection', { steps: 1, modes: ['sync', 'async'], episodesPerStep: 4, sftSteps: 1, evaluateEvery: 1, backend: 'wasm' })
    expect(column(report, 'mode')).toEqual(['sync', 'async'])
    const [sync, async] = column(report, 'episodes/s vs sync')
    expect(sync).toBe(1)
    expect(async).toBeGreaterThan(0)
    for (const value of column(report, 'exploitability after')) expect(value).toBeGreaterThan(0)
  })

  it('engine: batch generation against the engine, every part, the shared prompt computed once', async () => {
    const report = await runBenchSuite('engine', {
      games: ['tictactoe-v0'],
      presets: ['tiny'],
      episodes: 6,
      repeats: 1,
      sftSteps: 1,
      groupSize: 4,
      groups: 2,
      promptTokens: 12,
      newTokens: 3,
      batchSizes: [4],
      batchTokens: 2,
      shortRequests: 6,
      shortTokens: 2,
      clients: 2,
      longEvery: 3,
      longTokens: 20,
    })
    expect(report.tables.map((table) => table.title.split(':')[0])).toEqual(['Self-play collection', 'Sampling', 'Server under a mix'])
    for (const value of column(report, 'engine ÷ batch')) expect(value).toBeGreaterThan(0)
    // A group of 4 computes its 12-token prompt once (11 tokens: the last is fed with the first decode step).
    expect(report.tables[1]!.rows[0]!.slice(5, 7)).toEqual([2 * 4 * 12, 2 * 11])
    expect(column(report, 'errors', 2)).toEqual([0, 0])
  })
})
