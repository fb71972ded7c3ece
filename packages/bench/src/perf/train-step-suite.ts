import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { presetNames } from '@ludic/model'
import type { TopLevelSpec } from 'vega-lite'
import { z } from 'zod'
import { numberCell, ratioCell, type BenchCell, type BenchPeer, type BenchReport } from '../bench-report.js'
import { defineBenchSuite, startClock, type BenchContext } from '../bench-suite.js'
import { describeMachine } from '../machine.js'
import { isChildError, type ChildAnswer } from './child-process.js'
import { repetitionsOf, trainingBatch, type BackendMeasurements, type TrainStepMeasurement, type TrainStepSettings } from './measure-model.js'
import { bestPeerRun, findPeerPython, peerRunError, runPeerThreads, type PeerPython, type PeerRuns } from './python-peer.js'
import { runPerfChild } from './run-perf-child.js'

/** The backends the model suites measure, each in its own process. */
export const modelBenchBackends = ['wasm', 'tensorflow', 'cpu'] as const
export type ModelBenchBackend = (typeof modelBenchBackends)[number]

/** Options both model suites take. */
export const modelSuiteShape = {
  /** Model presets (`tiny` d=128/2 layers, `small` d=256/4, `base` d=512/8). Default all three. */
  presets: z.array(z.enum(presetNames)).min(1).default(['tiny', 'small', 'base']),
  /** Backends, each measured in its own process; one that is not installed says so in the table. Default wasm and tensorflow. */
  backends: z.array(z.enum(modelBenchBackends)).min(1).default(['wasm', 'tensorflow']),
  /** Timed repetitions per preset after warm-up. Default: the suite's (5 steps, 3 generations; `quick`: fewer). */
  repetitions: z.number().int().positive().max(1000).optional(),
  /** Fewer repetitions (a smoke run: figures are noisier). Default false. */
  quick: z.boolean().default(false),
  /**
   * Thread counts the PyTorch peer runs with; the fastest counts (on a busy 2-core machine PyTorch's OpenMP barriers
   * can make 2 threads slower than 1). Default 2 and 1.
   */
  peerThreads: z.array(z.number().int().positive().max(256)).min(1).default([2, 1]),
  /** The peer's Python (must import torch). Default: `LUDIC_PEER_PYTHON`, else `.venv-peer/bin/python` here or above. */
  peerPython: z.string().min(1).optional(),
  /** Vocabulary of the models. Default 4096. */
  vocabSize: z.number().int().min(16).max(262_144).default(4096),
}

/** Whether a backend's package can be found (it may still fail to start; the child then says why). */
export function backendInstalled(backend: ModelBenchBackend): string | undefined {
  if (backend !== 'tensorflow') return undefined
  try {
    createRequire(import.meta.url).resolve('@tensorflow/tfjs-node')
    return undefined
  } catch {
    return '@tensorflow/tfjs-node is not installed'
  }
}

/** The peer as the report lists it. */
export function pytorchPeer(peer: PeerPython, threads: readonly number[]): BenchPeer {
  return 'unavailable' in peer
    ? { available: false, reason: peer.unavailable }
    : { available: true, version: `torch ${peer.torch}`, reason: `CPU, ${peer.python}, ${threads.join(' and ')} thread(s), the faster run counts` }
}

export const trainStepOptionsSchema = z.strictObject({
  ...modelSuiteShape,
  /** Sequences per step. Default 8. */
  batchSize: z.number().int().positive().max(1024).default(8),
  /** Tokens per sequence. Default 128. */
  sequenceLength: z.number().int().min(2).max(8192).default(128),
  /**
   * AdamW as TensorFlow's fused ops (`createAdamW`'s `fused`): `false` measures the composed ops beside a default run;
   * `true` on a backend without them fails that backend's column with the optimizer's error. Default: `createAdamW`'s
   * (fused on the native backend).
   */
  fusedOptimizer: z.boolean().optional(),
})
export type TrainStepOptions = z.input<typeof trainStepOptionsSchema>

interface PeerResult {
  initialLoss: number
  medianStepMs: number
  medianOptimizerMs: number
  stepMs: number[]
  parameters: number
  torch: string
  threads: number
}

const learningRate = 1e-3
const weightDecay = 0.01

/**
 * `train-step`: one training step — forward, next-token cross-entropy, backward, AdamW — of the model presets,
 * tokens/s per backend (each in its own process) beside the identical model and step in PyTorch CPU
 * (`peers/train_step.py`, loading the TypeScript model's own initial weights and batch), as ratios measured in one
 * run. Both report the loss before the first step, so "identical" is checked, not assumed.
 */
export const trainStepSuite = defineBenchSuite({
  name: 'train-step',
  description: 'Training step (forward, cross-entropy, backward, AdamW) tokens/s per backend, side by side with PyTorch CPU on the same weights and batch.',
  optionsSchema: trainStepOptionsSchema,
  async run(options, context: BenchContext): Promise<BenchReport> {
    const clock = startClock()
    const log = context.log ?? (() => {})
    const settings: TrainStepSettings = {
      presets: options.presets,
      batchSize: options.batchSize,
      sequenceLength: options.sequenceLength,
      vocabSize: options.vocabSize,
      learningRate,
      weightDecay,
      warmup: options.quick ? 1 : 2,
      repetitions: options.repetitions ?? (options.quick ? 2 : 5),
      ...(options.fusedOptimizer === undefined ? {} : { fusedOptimizer: options.fusedOptimizer }),
    }
    const tokensPerStep = settings.batchSize * settings.sequenceLength
    const total = options.backends.length + options.presets.length + 1
    let done = 0
    const progress = (label: string) => context.onProgress?.(++done, total, label)

    const peer = await findPeerPython(options.peerPython)
    const inputsDirectory = mkdtempSync(join(tmpdir(), 'ludic-bench-train-step-'))
    try {
      let peerInputsError: string | undefined
      if ('python' in peer) {
        const { inputIds, targets } = trainingBatch(settings)
        const written = await runPerfChild(
          {
            task: 'peer-inputs',
            directory: inputsDirectory,
            presets: settings.presets,
            vocabSize: settings.vocabSize,
            batch: { input_ids: inputIds.map((row) => [...row]), targets: targets.map((row) => [...row]) },
          },
          { timeoutMs: 10 * 60_000, ...(context.signal === undefined ? {} : { signal: context.signal }) },
        )
        if (isChildError(written)) peerInputsError = `its inputs could not be written (${written.error})`
      }
      progress('peer inputs')

      const backends: Partial<Record<ModelBenchBackend, ChildAnswer<BackendMeasurements<TrainStepMeasurement>>>> = {}
      for (const backend of options.backends) {
        context.signal?.throwIfAborted()
        const missing = backendInstalled(backend)
        if (missing !== undefined) backends[backend] = { error: missing }
        else {
          log(`${backend}: ${settings.presets.join(', ')}…`)
          backends[backend] = await runPerfChild<BackendMeasurements<TrainStepMeasurement>>(
            { task: 'train-step', backend, settings },
            { timeoutMs: 45 * 60_000, ...(context.signal === undefined ? {} : { signal: context.signal }), log },
          )
        }
        progress(backend)
      }

      const peerRuns: Record<string, PeerRuns<PeerResult>> = {}
      for (const preset of settings.presets) {
        context.signal?.throwIfAborted()
        if ('python' in peer && peerInputsError === undefined) {
          log(`PyTorch ${preset} (threads ${options.peerThreads.join(', ')})…`)
          peerRuns[preset] = await runPeerThreads<PeerResult>(
            peer.python,
            'train_step.py',
            [
              '--config',
              join(inputsDirectory, `${preset}.config.json`),
              '--weights',
              join(inputsDirectory, `${preset}.safetensors`),
              '--warmup',
              String(settings.warmup),
              '--repetitions',
              String(repetitionsOf(preset, settings.repetitions)),
              '--learning-rate',
              String(learningRate),
              '--weight-decay',
              String(weightDecay),
            ],
            options.peerThreads,
            (result) => result.medianStepMs,
            context.signal,
          )
        }
        progress(`PyTorch ${preset}`)
      }

      const measured = (backend: ModelBenchBackend, preset: string): TrainStepMeasurement | undefined => {
        const result = backends[backend]
        if (result === undefined || isChildError(result)) return undefined
        const entry = result.presets[preset]
        return entry === undefined || isChildError(entry) ? undefined : entry
      }
      const failure = (backend: ModelBenchBackend, preset: string): string => {
        const result = backends[backend]
        if (result === undefined) return 'not run'
        if (isChildError(result)) return result.error
        const entry = result.presets[preset]
        return entry !== undefined && isChildError(entry) ? entry.error : 'not run'
      }
      const peerUnavailable = (preset: string): string | undefined => {
        if ('unavailable' in peer) return peer.unavailable
        if (peerInputsError !== undefined) return peerInputsError
        return bestPeerRun(peerRuns[preset]) === undefined ? `PyTorch failed: ${peerRunError(peerRuns[preset]).slice(0, 160)}` : undefined
      }
      const peerRate = (preset: string): number | undefined => {
        const entry = bestPeerRun(peerRuns[preset])
        return entry === undefined ? undefined : tokensPerStep / (entry.medianStepMs / 1000)
      }
      const rows: BenchCell[][] = settings.presets.map((preset) => {
        const peerEntry = bestPeerRun(peerRuns[preset])
        return [
          preset,
          numberCell(options.backends.map((backend) => measured(backend, preset)?.parameters).find((value) => value !== undefined) ?? peerEntry?.parameters),
          ...options.backends.map(
            (backend): BenchCell => numberCell(measured(backend, preset)?.tokensPerSecond, 0) ?? `not measured: ${failure(backend, preset).slice(0, 120)}`,
          ),
          numberCell(peerRate(preset), 0) ?? `peer unavailable: ${peerUnavailable(preset)}`,
          ...options.backends.map((backend) => ratioCell(measured(backend, preset)?.tokensPerSecond, peerRate(preset), peerUnavailable(preset))),
          peerEntry === undefined ? null : peerRuns[preset]!.best!,
          ...options.backends.map((backend) => numberCell(measured(backend, preset)?.medianOptimizerMs, 1)),
          numberCell(peerEntry?.medianOptimizerMs, 1),
          ...options.backends.map((backend) => numberCell(measured(backend, preset)?.initialLoss, 5)),
          numberCell(peerEntry?.initialLoss, 5),
        ]
      })
      const backendNotes = options.backends.map((backend) => {
        const result = backends[backend]
        if (result === undefined || isChildError(result)) return `${backend}: not measured (${result?.error ?? 'not run'})`
        const unstable = Object.entries(result.presets)
          .filter(([, entry]) => !isChildError(entry) && !entry.tensorsStable)
          .map(([preset]) => preset)
        const fused = Object.values(result.presets).some((entry) => !isChildError(entry) && entry.fusedOptimizer === true)
        const optimizer = fused ? "AdamW as TensorFlow's fused ops (ResourceApplyAdam)" : 'AdamW as composed TensorFlow.js ops'
        return `${backend}: ${result.device}, ${result.threads} thread(s), ${optimizer}; ${unstable.length > 0 ? `numTensors grew during ${unstable.join(', ')}` : 'numTensors unchanged across the timed steps'}.`
      })
      const measuredBackends = options.backends.filter((backend) => {
        const result = backends[backend]
        return result !== undefined && !isChildError(result)
      })
      return {
        suite: 'train-step',
        title: 'Training step: Ludic beside PyTorch',
        startedAt: clock.startedAt,
        durationSeconds: clock.seconds(),
        machine: describeMachine(measuredBackends.length === 0 ? 'none' : measuredBackends.join(', ')),
        peers: { PyTorch: pytorchPeer(peer, options.peerThreads) },
        tables: [
          {
            title: `Forward + cross-entropy + backward + AdamW, batch ${settings.batchSize} × ${settings.sequenceLength} tokens, vocabulary ${settings.vocabSize}`,
            columns: [
              'preset',
              'parameters',
              ...options.backends.map((backend) => `${backend} tokens/s`),
              'PyTorch tokens/s',
              ...options.backends.map((backend) => `${backend} / PyTorch`),
              'PyTorch threads',
              ...options.backends.map((backend) => `${backend} optimizer ms`),
              'PyTorch optimizer ms',
              ...options.backends.map((backend) => `${backend} loss before step 1`),
              'PyTorch loss before step 1',
            ],
            rows,
            notes: [
              `Tokens/s from the median of ${settings.repetitions} timed steps (base: ${repetitionsOf('base', settings.repetitions)}) after ${settings.warmup} warm-up; a ratio > 1 means faster than PyTorch. Ratios are measured side by side in one run: compare them, not absolute figures across machines.`,
              ...backendNotes,
              "The peer trains the TypeScript model's own initial weights on the same batch: equal losses before step 1 show the two compute the same model.",
            ],
          },
        ],
        chart: speedChart(
          'Training step tokens/s',
          settings.presets.flatMap((preset) => [
            ...options.backends.map((backend) => ({ group: preset, implementation: `Ludic ${backend}`, value: measured(backend, preset)?.tokensPerSecond })),
            { group: preset, implementation: 'PyTorch', value: peerRate(preset) },
          ]),
          'tokens/s',
        ),
        raw: { settings, backends, peer, peerRuns },
      }
    } finally {
      rmSync(inputsDirectory, { recursive: true, force: true })
    }
  },
})

/**
 * A grouped bar chart of speeds: one group per preset, shape or tokenizer, one bar per implementation; missing
 * figures are left out.
 */
export function speedChart(title: string, points: readonly { group: string; implementation: string; value: number | undefined }[], unit: string): TopLevelSpec {
  const values = points.filter((point) => point.value !== undefined && Number.isFinite(point.value) && point.value > 0)
  const groups = new Set(values.map((point) => point.group)).size
  const implementations = new Set(values.map((point) => point.implementation)).size
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, subtitle: 'measured side by side in one run' },
    background: 'white',
    width: Math.max(240, groups * (implementations * 16 + 12)),
    height: 260,
    data: { values },
    mark: { type: 'bar' },
    encoding: {
      x: { field: 'group', type: 'nominal', title: null, sort: null, axis: { labelAngle: groups > 6 ? -40 : 0, labelLimit: 240 } },
      xOffset: { field: 'implementation', sort: null },
      y: { field: 'value', type: 'quantitative', title: unit },
      color: { field: 'implementation', title: null, sort: null, legend: { labelLimit: 400 } },
      tooltip: [{ field: 'group' }, { field: 'implementation' }, { field: 'value', format: ',.0f' }],
    },
  }
}
