/**
 * `decode` benchmark (docs: shared/specs/performance.md): batched sampling with a key/value cache — one
 * prefill of a 32-token prompt, then one forward pass per new token, temperature 1 over the full
 * vocabulary — for batch 1 and 8, 128 new tokens, presets `tiny`, `small`, `base` (vocabulary 4096);
 * generated tokens/s per backend (wasm, tensorflow), each in its own process, beside the identical model and
 * loop in PyTorch CPU (peers/decode.py) run with `LUDIC_PEER_PYTHON` at 2 threads and at 1 (the faster
 * counts; see `peerThreads`) — reported as ratios. The peer loads the TypeScript model's own weights and
 * prompts, and both report the prompt's last logits, so "identical" is checked, not assumed.
 *
 *   npx tsx packages/model/bench/decode.ts [--presets tiny,small] [--backends wasm,tensorflow] [--repetitions 3] [--peer-threads 2,1] [--quick]
 *
 * Writes `<repository root>/bench-results/decode.{json,md}`. Medians after warm-up; compare the ratios
 * (measured side by side in one run), not absolute times across machines.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as tf from '@tensorflow/tfjs-core'
import { initTensors } from '@ludic/tensors'
import { createModel, generate } from '../src/index.js'
import {
  backendInstalled,
  describeMachine,
  formatNumber,
  formatRatio,
  machine,
  median,
  parseBenchArguments,
  bestPeerRun,
  peerError,
  peerPython,
  runChild,
  runPeerThreads,
  tokenBatch,
  type PeerRuns,
  writePeerInputs,
  writeResults,
  type BenchBackend,
} from './bench-support.js'

const thisFile = fileURLToPath(import.meta.url)
const batchSizes = [1, 8] as const
const promptLength = 32
const newTokens = 128
const vocabSize = 4096

interface DecodeMeasurement {
  medianGenerationMs: number
  generationMs: number[]
  tokensPerSecond: number
  /** Σ of the prompt's last-position logits of row 0…batch−1, and the first four of row 0 (to compare with the peer). */
  lastLogitsSum: number
  lastLogitsFirst: number[]
  tensorsStable: boolean
}
interface ChildResult {
  backend: BenchBackend
  device: string
  threads: number
  presets: Record<string, Record<string, DecodeMeasurement | { error: string }>>
}
interface PeerResult {
  medianGenerationMs: number
  generationMs: number[]
  lastLogitsSum: number
  lastLogitsFirst: number[]
  torch: string
  threads: number
}

const options = parseBenchArguments(process.argv.slice(2))
delete process.env.LUDIC_BACKEND // each process here picks its backend itself

function repetitionsFor(): { warmup: number; repetitions: number } {
  return options.quick ? { warmup: 1, repetitions: 1 } : { warmup: 1, repetitions: options.repetitions ?? 3 }
}

const prompts = tokenBatch(8, promptLength, vocabSize, 21)

async function measureBackend(backend: BenchBackend): Promise<ChildResult> {
  const runtime = await initTensors({ backend, verbose: false })
  const result: ChildResult = { backend, device: runtime.device, threads: runtime.threads, presets: {} }
  for (const preset of options.presets) {
    const model = createModel(preset, { vocabSize, seed: 0 })
    const entries: Record<string, DecodeMeasurement | { error: string }> = {}
    result.presets[preset] = entries
    for (const batch of batchSizes) {
      try {
        const inputIds = prompts.slice(0, batch)
        const lastLogits = tf.tidy(() => {
          const logits = model.forward(inputIds) // [batch, promptLength, vocab]
          return tf.squeeze(tf.slice(logits, [0, promptLength - 1, 0], [batch, 1, vocabSize]), [1]).arraySync() as number[][]
        })
        const run = async (): Promise<number> => {
          const begin = performance.now()
          const sequences = await generate(model, { inputIds, maxNewTokens: newTokens, temperature: 1, seed: 0, stopTokenIds: [] })
          const elapsed = performance.now() - begin
          for (const sequence of sequences)
            if (sequence.tokenIds.length !== newTokens) throw new Error(`generated ${sequence.tokenIds.length} tokens, not ${newTokens}`)
          return elapsed
        }
        const { warmup, repetitions } = repetitionsFor()
        for (let index = 0; index < warmup; index++) await run()
        const before = tf.memory().numTensors
        const generationMs: number[] = []
        for (let index = 0; index < repetitions; index++) generationMs.push(await run())
        const medianGenerationMs = median(generationMs)
        entries[String(batch)] = {
          medianGenerationMs,
          generationMs,
          tokensPerSecond: (batch * newTokens) / (medianGenerationMs / 1000),
          lastLogitsSum: lastLogits.flat().reduce((total, value) => total + value, 0),
          lastLogitsFirst: lastLogits[0]!.slice(0, 4),
          tensorsStable: tf.memory().numTensors === before,
        }
      } catch (error) {
        entries[String(batch)] = { error: (error as Error).message }
      }
      console.error(`  ${backend} ${preset} batch ${batch}: ${JSON.stringify(entries[String(batch)]).slice(0, 160)}`)
    }
    model.dispose()
  }
  return result
}

if (options.child !== undefined) {
  console.log(JSON.stringify(await measureBackend(options.child)))
  process.exit(0)
}

const info = machine()
console.log(`decode benchmark — ${describeMachine(info)}`)
console.log(
  `prompt ${promptLength} tokens, ${newTokens} new tokens, batch ${batchSizes.join(' and ')}, vocabulary ${vocabSize}, temperature 1; presets ${options.presets.join(', ')}`,
)

const inputsDirectory = mkdtempSync(join(tmpdir(), 'ludic-bench-decode-'))
const peer = peerPython()
const peerInputs = new Map<string, { weights: string; config: string }>()
if ('python' in peer) {
  await initTensors({ backend: 'cpu', verbose: false })
  for (const preset of options.presets) {
    const model = createModel(preset, { vocabSize, seed: 0 })
    peerInputs.set(preset, await writePeerInputs(inputsDirectory, preset, model, { prompt: prompts }))
    model.dispose()
  }
}

const backends: Partial<Record<BenchBackend, ChildResult | { error: string }>> = {}
for (const backend of options.backends) {
  if (!backendInstalled(backend)) {
    backends[backend] = { error: 'not installed' }
    continue
  }
  console.log(`${backend}…`)
  backends[backend] = runChild<ChildResult>(thisFile, backend, process.argv.slice(2), 45 * 60_000)
}

const peerResults: Record<string, Record<string, PeerRuns<PeerResult>>> = {}
if ('python' in peer) {
  for (const preset of options.presets) {
    peerResults[preset] = {}
    for (const batch of batchSizes) {
      console.log(`PyTorch ${preset} batch ${batch} (threads ${options.peerThreads.join(', ')})…`)
      const inputs = peerInputs.get(preset)!
      const { warmup, repetitions } = repetitionsFor()
      peerResults[preset]![String(batch)] = runPeerThreads<PeerResult>(
        peer.python,
        'decode.py',
        [
          '--config',
          inputs.config,
          '--weights',
          inputs.weights,
          '--batch',
          String(batch),
          '--new-tokens',
          String(newTokens),
          '--warmup',
          String(warmup),
          '--repetitions',
          String(repetitions),
        ],
        options.peerThreads,
        (result) => result.medianGenerationMs,
      )
    }
  }
}
rmSync(inputsDirectory, { recursive: true, force: true })

// Report.
const measured = (backend: BenchBackend, preset: string, batch: number): DecodeMeasurement | undefined => {
  const result = backends[backend]
  if (result === undefined || 'error' in result) return undefined
  const entry = result.presets[preset]?.[String(batch)]
  return entry === undefined || 'error' in entry ? undefined : entry
}
const errorOf = (backend: BenchBackend, preset: string, batch: number): string => {
  const result = backends[backend]
  if (result === undefined) return 'not run'
  if ('error' in result) return result.error
  const entry = result.presets[preset]?.[String(batch)]
  return entry !== undefined && 'error' in entry ? entry.error : 'not run'
}
const peerMeasured = (preset: string, batch: number): PeerResult | undefined => bestPeerRun(peerResults[preset]?.[String(batch)])
const peerNote =
  'unavailable' in peer
    ? `peer unavailable: ${peer.unavailable}`
    : `peer: PyTorch ${peer.torch} CPU (${peer.python}), run with ${options.peerThreads.join(' and ')} thread(s); the table shows the faster run (threads in brackets), tokens/s of every run: ` +
      options.presets
        .flatMap((preset) =>
          batchSizes.map(
            (batch) =>
              `${preset} batch ${batch} ${Object.entries(peerResults[preset]?.[String(batch)]?.byThreads ?? {})
                .map(
                  ([threads, result]) =>
                    `${threads}t ${'error' in result ? 'error' : formatNumber((batch * newTokens) / (result.medianGenerationMs / 1000), 1)}`,
                )
                .join(', ')}`,
          ),
        )
        .join('; ')
const header = [
  '| preset | batch | ' +
    options.backends.map((backend) => `${backend} tokens/s`).join(' | ') +
    ' | PyTorch tokens/s | ' +
    options.backends.map((backend) => `${backend} / PyTorch`).join(' | ') +
    ' | prompt logits Σ (' +
    [...options.backends, 'PyTorch'].join(' / ') +
    ') |',
  `|${' --- |'.repeat(4 + 2 * options.backends.length)}`,
]
const rows = options.presets.flatMap((preset) =>
  batchSizes.map((batch) => {
    const peerEntry = peerMeasured(preset, batch)
    const peerRate = peerEntry === undefined ? undefined : (batch * newTokens) / (peerEntry.medianGenerationMs / 1000)
    const peerFailure = 'unavailable' in peer ? 'peer unavailable' : peerError(peerResults[preset]?.[String(batch)])
    const cells = [
      preset,
      String(batch),
      ...options.backends.map((backend) => {
        const entry = measured(backend, preset, batch)
        return entry === undefined ? `— (${errorOf(backend, preset, batch).slice(0, 60)})` : formatNumber(entry.tokensPerSecond, 1)
      }),
      peerRate === undefined ? `— (${peerFailure.slice(0, 60)})` : `${formatNumber(peerRate, 1)} (${peerResults[preset]![String(batch)]!.best}t)`,
      ...options.backends.map((backend) => {
        const rate = measured(backend, preset, batch)?.tokensPerSecond
        return formatRatio(rate === undefined || peerRate === undefined ? undefined : rate / peerRate)
      }),
      [...options.backends.map((backend) => measured(backend, preset, batch)?.lastLogitsSum), peerEntry?.lastLogitsSum]
        .map((value) => formatNumber(value, 4))
        .join(' / '),
    ]
    return `| ${cells.join(' | ')} |`
  }),
)
const backendNotes = options.backends.map((backend) => {
  const result = backends[backend]
  if (result === undefined || 'error' in result) return `- ${backend}: ${result?.error ?? 'not run'}`
  const unstable = Object.entries(result.presets).flatMap(([preset, entries]) =>
    Object.entries(entries)
      .filter(([, entry]) => !('error' in entry) && !entry.tensorsStable)
      .map(([batch]) => `${preset} batch ${batch}`),
  )
  return `- ${backend}: ${result.device}, ${result.threads} thread(s)${unstable.length > 0 ? `; numTensors grew during ${unstable.join(', ')}` : '; numTensors unchanged across timed generations'}`
})
const markdown = [
  '# decode',
  '',
  `Batched sampling with a key/value cache: a ${promptLength}-token prompt, ${newTokens} new tokens per sequence, temperature 1, vocabulary ${vocabSize}. Generated tokens/s (batch × ${newTokens} / median time of a whole generation, prefill included); ratios > 1 mean faster than PyTorch.`,
  '',
  `Machine: ${describeMachine(info)}.`,
  '',
  ...header,
  ...rows,
  '',
  ...backendNotes,
  `- ${peerNote}`,
  "- The peer decodes with the TypeScript model's own weights and prompts: equal sums of the prompt's last-position logits show the two compute the same model.",
  '',
].join('\n')
console.log(`\n${markdown}`)
writeResults(
  'decode',
  { suite: 'decode', machine: info, promptLength, newTokens, batchSizes, vocabSize, backends, peer: { ...peer, results: peerResults } },
  markdown,
)
