/**
 * `train-step` benchmark (docs: shared/specs/performance.md): one training step — forward, next-token
 * cross-entropy, backward, AdamW — of the presets `tiny` (d=128, 2 layers), `small` (d=256, 4 layers) and
 * `base` (d=512, 8 layers), batch 8 × 128 tokens, vocabulary 4096; tokens/s per backend (wasm, tensorflow),
 * each in its own process, beside the identical model and step in PyTorch CPU (peers/train_step.py) run
 * with `LUDIC_PEER_PYTHON` at 2 threads and at 1 (the faster counts; see `peerThreads`) — reported as
 * ratios. The peer loads the TypeScript model's own weights and batch, and both report the loss before the
 * first step, so "identical" is checked, not assumed.
 *
 *   npx tsx packages/model/bench/train-step.ts [--presets tiny,small] [--backends wasm,tensorflow] [--repetitions 5] [--peer-threads 2,1] [--quick]
 *
 * Writes `<repository root>/bench-results/train-step.{json,md}`. Medians after warm-up; compare the ratios
 * (measured side by side in one run), not absolute times across machines.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as tf from '@tensorflow/tfjs-core'
import { initTensors, tokenLogprobs } from '@ludic/tensors'
import { computeGradients, createAdamW, createModel, type CausalLanguageModel } from '../src/index.js'
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
const batchSize = 8
const sequenceLength = 128
const vocabSize = 4096
const learningRate = 1e-3
const weightDecay = 0.01
const tokensPerStep = batchSize * sequenceLength

interface PresetMeasurement {
  parameters: number
  initialLoss: number
  medianStepMs: number
  medianOptimizerMs: number
  stepMs: number[]
  tokensPerSecond: number
  tensorsStable: boolean
}
interface ChildResult {
  backend: BenchBackend
  device: string
  threads: number
  presets: Record<string, PresetMeasurement | { error: string }>
}
interface PeerResult {
  initialLoss: number
  medianStepMs: number
  medianOptimizerMs: number
  stepMs: number[]
  parameters: number
  torch: string
  threads: number
}

const options = parseBenchArguments(process.argv.slice(2))
delete process.env.LUDIC_BACKEND // each process here picks its backend itself

function repetitionsFor(preset: string): { warmup: number; repetitions: number } {
  if (options.quick) return { warmup: 1, repetitions: 2 }
  const repetitions = options.repetitions ?? (preset === 'base' ? 3 : 5)
  return { warmup: preset === 'base' ? 1 : 2, repetitions }
}

/** The batch every side trains on: input ids and independent next-token targets, [8, 128] each. */
function trainingBatch(): { inputIds: Int32Array[]; targets: Int32Array[] } {
  return { inputIds: tokenBatch(batchSize, sequenceLength, vocabSize, 11), targets: tokenBatch(batchSize, sequenceLength, vocabSize, 12) }
}

/** Mean next-token cross-entropy: −mean log p(target). */
function lossOf(model: CausalLanguageModel, inputIds: Int32Array[], targets: tf.Tensor2D): tf.Scalar {
  return tf.tidy(() => tf.neg(tf.mean(tokenLogprobs(model.forward(inputIds), targets))) as tf.Scalar)
}

async function measureBackend(backend: BenchBackend): Promise<ChildResult> {
  const runtime = await initTensors({ backend, verbose: false })
  const result: ChildResult = { backend, device: runtime.device, threads: runtime.threads, presets: {} }
  const { inputIds, targets: targetRows } = trainingBatch()
  for (const preset of options.presets) {
    const model = createModel(preset, { vocabSize, seed: 0 })
    const targets = tf.tensor2d(Int32Array.from(targetRows.flatMap((row) => [...row])), [batchSize, sequenceLength], 'int32')
    try {
      const parameters = model.trainableParameters()
      const optimizer = createAdamW(parameters, { learningRate, weightDecay })
      const initialLoss = tf.tidy(() => lossOf(model, inputIds, targets).dataSync()[0]!)
      const step = (): { totalMs: number; optimizerMs: number } => {
        const begin = performance.now()
        const { loss, gradients } = computeGradients(() => lossOf(model, inputIds, targets), parameters)
        const value = loss.dataSync()[0]!
        const optimizerBegin = performance.now()
        optimizer.step(gradients)
        const end = performance.now()
        tf.dispose([loss, ...gradients.values()])
        if (!Number.isFinite(value)) throw new Error(`loss is ${value}`)
        return { totalMs: end - begin, optimizerMs: end - optimizerBegin }
      }
      const { warmup, repetitions } = repetitionsFor(preset)
      for (let index = 0; index < warmup; index++) step()
      const before = tf.memory().numTensors
      const times = Array.from({ length: repetitions }, step)
      const stepMs = times.map((time) => time.totalMs)
      const medianStepMs = median(stepMs)
      result.presets[preset] = {
        parameters: model.numParameters,
        initialLoss,
        medianStepMs,
        medianOptimizerMs: median(times.map((time) => time.optimizerMs)),
        stepMs,
        tokensPerSecond: tokensPerStep / (medianStepMs / 1000),
        tensorsStable: tf.memory().numTensors === before,
      }
      optimizer.dispose()
    } catch (error) {
      result.presets[preset] = { error: (error as Error).message }
    } finally {
      targets.dispose()
      model.dispose()
    }
    console.error(`  ${backend} ${preset}: ${JSON.stringify(result.presets[preset]).slice(0, 160)}`)
  }
  return result
}

if (options.child !== undefined) {
  console.log(JSON.stringify(await measureBackend(options.child)))
  process.exit(0)
}

const info = machine()
console.log(`train-step benchmark — ${describeMachine(info)}`)
console.log(
  `batch ${batchSize} × ${sequenceLength} tokens, vocabulary ${vocabSize}, AdamW (lr ${learningRate}, weight decay ${weightDecay}); presets ${options.presets.join(', ')}`,
)

// The peer's inputs: each preset's initial weights and the batch, written once (the weights come from the seed, not the backend).
const inputsDirectory = mkdtempSync(join(tmpdir(), 'ludic-bench-train-step-'))
const peer = peerPython()
const peerInputs = new Map<string, { weights: string; config: string }>()
if ('python' in peer) {
  await initTensors({ backend: 'cpu', verbose: false })
  const { inputIds, targets } = trainingBatch()
  for (const preset of options.presets) {
    const model = createModel(preset, { vocabSize, seed: 0 })
    peerInputs.set(preset, await writePeerInputs(inputsDirectory, preset, model, { input_ids: inputIds, targets }))
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

const peerResults: Record<string, PeerRuns<PeerResult>> = {}
if ('python' in peer) {
  for (const preset of options.presets) {
    console.log(`PyTorch ${preset} (threads ${options.peerThreads.join(', ')})…`)
    const inputs = peerInputs.get(preset)!
    const { warmup, repetitions } = repetitionsFor(preset)
    peerResults[preset] = runPeerThreads<PeerResult>(
      peer.python,
      'train_step.py',
      [
        '--config',
        inputs.config,
        '--weights',
        inputs.weights,
        '--warmup',
        String(warmup),
        '--repetitions',
        String(repetitions),
        '--learning-rate',
        String(learningRate),
        '--weight-decay',
        String(weightDecay),
      ],
      options.peerThreads,
      (result) => result.medianStepMs,
    )
  }
}
rmSync(inputsDirectory, { recursive: true, force: true })

// Report.
const measured = (backend: BenchBackend, preset: string): PresetMeasurement | undefined => {
  const result = backends[backend]
  if (result === undefined || 'error' in result) return undefined
  const entry = result.presets[preset]
  return entry === undefined || 'error' in entry ? undefined : entry
}
const peerMeasured = (preset: string): PeerResult | undefined => bestPeerRun(peerResults[preset])
const peerTokensPerSecond = (preset: string): number | undefined => {
  const entry = peerMeasured(preset)
  return entry === undefined ? undefined : tokensPerStep / (entry.medianStepMs / 1000)
}
const peerNote =
  'unavailable' in peer
    ? `peer unavailable: ${peer.unavailable}`
    : `peer: PyTorch ${peer.torch} CPU (${peer.python}), run with ${options.peerThreads.join(' and ')} thread(s); the table shows the faster run (threads in brackets), tokens/s of every run: ` +
      options.presets
        .map(
          (preset) =>
            `${preset} ${Object.entries(peerResults[preset]?.byThreads ?? {})
              .map(([threads, result]) => `${threads}t ${'error' in result ? 'error' : formatNumber(tokensPerStep / (result.medianStepMs / 1000))}`)
              .join(', ')}`,
        )
        .join('; ')
const header = [
  '| preset | parameters | ' +
    options.backends.map((backend) => `${backend} tokens/s`).join(' | ') +
    ' | PyTorch tokens/s | ' +
    options.backends.map((backend) => `${backend} / PyTorch`).join(' | ') +
    ' | optimizer ms (' +
    [...options.backends, 'PyTorch'].join(' / ') +
    ') | loss before step 1 (' +
    [...options.backends, 'PyTorch'].join(' / ') +
    ') |',
  `|${' --- |'.repeat(4 + 2 * options.backends.length + 1)}`,
]
const rows = options.presets.map((preset) => {
  const peerRate = peerTokensPerSecond(preset)
  const cells = [
    preset,
    formatNumber(measured(options.backends[0]!, preset)?.parameters ?? peerMeasured(preset)?.parameters),
    ...options.backends.map((backend) => {
      const entry = measured(backend, preset)
      const result = backends[backend]
      if (entry !== undefined) return formatNumber(entry.tokensPerSecond)
      const error = result === undefined ? 'not run' : 'error' in result ? result.error : (result.presets[preset] as { error: string } | undefined)?.error
      return `— (${(error ?? 'not run').slice(0, 60)})`
    }),
    peerRate === undefined
      ? `— (${'unavailable' in peer ? 'peer unavailable' : peerError(peerResults[preset]).slice(0, 60)})`
      : `${formatNumber(peerRate)} (${peerResults[preset]!.best}t)`,
    ...options.backends.map((backend) => {
      const rate = measured(backend, preset)?.tokensPerSecond
      return formatRatio(rate === undefined || peerRate === undefined ? undefined : rate / peerRate)
    }),
    [...options.backends.map((backend) => measured(backend, preset)?.medianOptimizerMs), peerMeasured(preset)?.medianOptimizerMs]
      .map((value) => formatNumber(value, 1))
      .join(' / '),
    [...options.backends.map((backend) => measured(backend, preset)?.initialLoss), peerMeasured(preset)?.initialLoss]
      .map((value) => formatNumber(value, 5))
      .join(' / '),
  ]
  return `| ${cells.join(' | ')} |`
})
const backendNotes = options.backends.map((backend) => {
  const result = backends[backend]
  if (result === undefined || 'error' in result) return `- ${backend}: ${result?.error ?? 'not run'}`
  const unstable = Object.entries(result.presets)
    .filter(([, entry]) => !('error' in entry) && !entry.tensorsStable)
    .map(([preset]) => preset)
  return `- ${backend}: ${result.device}, ${result.threads} thread(s)${unstable.length > 0 ? `; numTensors grew during ${unstable.join(', ')}` : '; numTensors unchanged across timed steps'}`
})
const markdown = [
  '# train-step',
  '',
  `Forward + next-token cross-entropy + backward + AdamW, batch ${batchSize} × ${sequenceLength} tokens, vocabulary ${vocabSize}. Tokens/s from the median step after warm-up; ratios > 1 mean faster than PyTorch.`,
  '',
  `Machine: ${describeMachine(info)}.`,
  '',
  ...header,
  ...rows,
  '',
  ...backendNotes,
  `- ${peerNote}`,
  "- The peer trains the TypeScript model's own initial weights on the same batch: equal losses before step 1 show the two compute the same model.",
  '',
].join('\n')
console.log(`\n${markdown}`)
writeResults(
  'train-step',
  { suite: 'train-step', machine: info, batchSize, sequenceLength, vocabSize, learningRate, weightDecay, backends, peer: { ...peer, results: peerResults } },
  markdown,
)
