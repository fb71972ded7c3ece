import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { z } from 'zod'
import { numberCell, ratioCell, type BenchCell, type BenchReport } from '../bench-report.js'
import { defineBenchSuite, startClock, type BenchContext } from '../bench-suite.js'
import { describeMachine } from '../machine.js'
import { isChildError, type ChildAnswer } from './child-process.js'
import { decodePrompts, type BackendMeasurements, type DecodeMeasurement, type DecodeSettings } from './measure-model.js'
import { bestPeerRun, findPeerPython, peerRunError, runPeerThreads, type PeerRuns } from './python-peer.js'
import { runPerfChild } from './run-perf-child.js'
import { backendInstalled, modelSuiteShape, pytorchPeer, speedChart, type ModelBenchBackend } from './train-step-suite.js'

export const decodeOptionsSchema = z.strictObject({
  ...modelSuiteShape,
  /** Batch sizes (sequences decoded together). Default 1 and 8. */
  batchSizes: z.array(z.number().int().positive().max(256)).min(1).default([1, 8]),
  /** Prompt tokens. Default 32. */
  promptLength: z.number().int().positive().max(4096).default(32),
  /** New tokens per sequence. Default 128. */
  newTokens: z.number().int().positive().max(4096).default(128),
  /**
   * What samples on Ludic's side: `generate` (one batch run to its end), or `engine` (every row submitted at once to a
   * fresh `GenerationEngine`, rows as the batch). Default: `generate`.
   */
  sampler: z.enum(['generate', 'engine']).default('generate'),
  /** With `sampler: 'engine'`: where its weight products run (`GenerationEngine`'s `products`). Default: `host`. */
  engineProducts: z.enum(['host', 'backend']).default('host'),
  /** With `sampler: 'engine'`: its `threads` (the host's products and each step's attention rows shared). Default: 1. */
  engineThreads: z.number().int().min(1).max(64).default(1),
  /**
   * With `sampler: 'engine'`: its `prefillChunkTokens` — 2,048 prefills a GRPO step's 128 prompts of 16 tokens in one
   * iteration. Default: the engine's (256).
   */
  enginePrefillChunkTokens: z.number().int().min(1).max(8192).optional(),
  /** With `sampler: 'engine'`: its `pageTokens` (positions a page of keys and values holds). Default: the engine's (32). */
  enginePageTokens: z.number().int().min(4).max(1024).optional(),
})
export type DecodeOptions = z.input<typeof decodeOptionsSchema>

interface PeerResult {
  medianGenerationMs: number
  generationMs: number[]
  lastLogitsSum: number
  lastLogitsFirst: number[]
  torch: string
  threads: number
}

/**
 * `decode`: batched sampling with a key/value cache — one prefill, then one forward pass per new token,
 * temperature 1 over the full vocabulary — generated tokens/s per backend (each in its own process) beside the
 * identical model and loop in PyTorch CPU (`peers/decode.py`, the TypeScript model's own weights and prompts), as
 * ratios measured in one run. Both report the prompt's last logits, so "identical" is checked.
 */
export const decodeSuite = defineBenchSuite({
  name: 'decode',
  description: 'Batched KV-cached sampling tokens/s per backend, side by side with PyTorch CPU on the same weights and prompts.',
  optionsSchema: decodeOptionsSchema,
  async run(options, context: BenchContext): Promise<BenchReport> {
    const clock = startClock()
    const log = context.log ?? (() => {})
    const settings: DecodeSettings = {
      presets: options.presets,
      batchSizes: options.batchSizes,
      promptLength: options.promptLength,
      newTokens: options.newTokens,
      sampler: options.sampler,
      engineProducts: options.engineProducts,
      engineThreads: options.engineThreads,
      ...(options.enginePrefillChunkTokens === undefined ? {} : { enginePrefillChunkTokens: options.enginePrefillChunkTokens }),
      ...(options.enginePageTokens === undefined ? {} : { enginePageTokens: options.enginePageTokens }),
      vocabSize: options.vocabSize,
      warmup: 1,
      repetitions: options.repetitions ?? (options.quick ? 1 : 3),
    }
    const total = options.backends.length + options.presets.length + 1
    let done = 0
    const progress = (label: string) => context.onProgress?.(++done, total, label)
    const signal = context.signal === undefined ? {} : { signal: context.signal }

    const peer = await findPeerPython(options.peerPython)
    const inputsDirectory = mkdtempSync(join(tmpdir(), 'ludic-bench-decode-'))
    try {
      let peerInputsError: string | undefined
      if ('python' in peer) {
        const written = await runPerfChild(
          {
            task: 'peer-inputs',
            directory: inputsDirectory,
            presets: settings.presets,
            vocabSize: settings.vocabSize,
            batch: { prompt: decodePrompts(settings).map((row) => [...row]) },
          },
          { timeoutMs: 10 * 60_000, ...signal },
        )
        if (isChildError(written)) peerInputsError = `its inputs could not be written (${written.error})`
      }
      progress('peer inputs')

      const backends: Partial<Record<ModelBenchBackend, ChildAnswer<BackendMeasurements<DecodeMeasurement>>>> = {}
      for (const backend of options.backends) {
        context.signal?.throwIfAborted()
        const missing = backendInstalled(backend)
        if (missing !== undefined) backends[backend] = { error: missing }
        else {
          log(`${backend}: ${settings.presets.join(', ')}, batch ${settings.batchSizes.join(' and ')}…`)
          backends[backend] = await runPerfChild<BackendMeasurements<DecodeMeasurement>>(
            { task: 'decode', backend, settings },
            { timeoutMs: 45 * 60_000, ...signal, log },
          )
        }
        progress(backend)
      }

      const peerRuns: Record<string, PeerRuns<PeerResult>> = {}
      for (const preset of settings.presets) {
        for (const batch of settings.batchSizes) {
          context.signal?.throwIfAborted()
          if (!('python' in peer) || peerInputsError !== undefined) continue
          log(`PyTorch ${preset} batch ${batch} (threads ${options.peerThreads.join(', ')})…`)
          peerRuns[`${preset}/${batch}`] = await runPeerThreads<PeerResult>(
            peer.python,
            'decode.py',
            [
              '--config',
              join(inputsDirectory, `${preset}.config.json`),
              '--weights',
              join(inputsDirectory, `${preset}.safetensors`),
              '--batch',
              String(batch),
              '--new-tokens',
              String(settings.newTokens),
              '--warmup',
              String(settings.warmup),
              '--repetitions',
              String(settings.repetitions),
            ],
            options.peerThreads,
            (result) => result.medianGenerationMs,
            context.signal,
          )
        }
        progress(`PyTorch ${preset}`)
      }

      const measured = (backend: ModelBenchBackend, key: string): DecodeMeasurement | undefined => {
        const result = backends[backend]
        if (result === undefined || isChildError(result)) return undefined
        const entry = result.presets[key]
        return entry === undefined || isChildError(entry) ? undefined : entry
      }
      const failure = (backend: ModelBenchBackend, key: string): string => {
        const result = backends[backend]
        if (result === undefined) return 'not run'
        if (isChildError(result)) return result.error
        const entry = result.presets[key]
        return entry !== undefined && isChildError(entry) ? entry.error : 'not run'
      }
      const peerUnavailable = (key: string): string | undefined => {
        if ('unavailable' in peer) return peer.unavailable
        if (peerInputsError !== undefined) return peerInputsError
        return bestPeerRun(peerRuns[key]) === undefined ? `PyTorch failed: ${peerRunError(peerRuns[key]).slice(0, 160)}` : undefined
      }
      const peerRate = (key: string, batch: number): number | undefined => {
        const entry = bestPeerRun(peerRuns[key])
        return entry === undefined ? undefined : (batch * settings.newTokens) / (entry.medianGenerationMs / 1000)
      }
      const cases = settings.presets.flatMap((preset) => settings.batchSizes.map((batch) => ({ preset, batch, key: `${preset}/${batch}` })))
      const rows: BenchCell[][] = cases.map(({ preset, batch, key }) => {
        const peerEntry = bestPeerRun(peerRuns[key])
        return [
          preset,
          batch,
          ...options.backends.map(
            (backend): BenchCell => numberCell(measured(backend, key)?.tokensPerSecond, 1) ?? `not measured: ${failure(backend, key).slice(0, 120)}`,
          ),
          numberCell(peerRate(key, batch), 1) ?? `peer unavailable: ${peerUnavailable(key)}`,
          ...options.backends.map((backend) => ratioCell(measured(backend, key)?.tokensPerSecond, peerRate(key, batch), peerUnavailable(key))),
          peerEntry === undefined ? null : peerRuns[key]!.best!,
          ...options.backends.map((backend) => numberCell(measured(backend, key)?.lastLogitsSum, 4)),
          numberCell(peerEntry?.lastLogitsSum, 4),
        ]
      })
      const backendNotes = options.backends.map((backend) => {
        const result = backends[backend]
        if (result === undefined || isChildError(result)) return `${backend}: not measured (${result?.error ?? 'not run'})`
        const unstable = Object.entries(result.presets)
          .filter(([, entry]) => !isChildError(entry) && !entry.tensorsStable)
          .map(([key]) => key)
        return `${backend}: ${result.device}, ${result.threads} thread(s); ${unstable.length > 0 ? `numTensors grew during ${unstable.join(', ')}` : 'numTensors unchanged across the timed generations'}.`
      })
      const measuredBackends = options.backends.filter((backend) => {
        const result = backends[backend]
        return result !== undefined && !isChildError(result)
      })
      return {
        suite: 'decode',
        title: 'Decoding: Ludic beside PyTorch',
        startedAt: clock.startedAt,
        durationSeconds: clock.seconds(),
        machine: describeMachine(measuredBackends.length === 0 ? 'none' : measuredBackends.join(', ')),
        peers: { PyTorch: pytorchPeer(peer, options.peerThreads) },
        tables: [
          {
            title: `Batched sampling with a key/value cache (Ludic: ${settings.sampler === 'engine' ? `GenerationEngine, products on the ${settings.engineProducts}, ${settings.engineThreads} thread${settings.engineThreads === 1 ? '' : 's'}, prefill chunks of ${settings.enginePrefillChunkTokens ?? 256} tokens, pages of ${settings.enginePageTokens ?? 32}` : 'generate'}): ${settings.promptLength}-token prompt, ${settings.newTokens} new tokens, temperature 1, vocabulary ${settings.vocabSize}`,
            columns: [
              'preset',
              'batch',
              ...options.backends.map((backend) => `${backend} tokens/s`),
              'PyTorch tokens/s',
              ...options.backends.map((backend) => `${backend} / PyTorch`),
              'PyTorch threads',
              ...options.backends.map((backend) => `${backend} prompt logits Σ`),
              'PyTorch prompt logits Σ',
            ],
            rows,
            notes: [
              `Generated tokens/s: batch × ${settings.newTokens} over the median time of ${settings.repetitions} whole generations (prefill included) after ${settings.warmup} warm-up; a ratio > 1 means faster than PyTorch, measured side by side in one run.`,
              ...backendNotes,
              "The peer decodes with the TypeScript model's own weights and prompts: equal sums of the prompt's last-position logits show the two compute the same model.",
            ],
          },
        ],
        chart: speedChart(
          'Decoding tokens/s',
          cases.flatMap(({ preset, batch, key }) => [
            ...options.backends.map((backend) => ({
              group: `${preset} batch ${batch}`,
              implementation: `Ludic ${backend}`,
              value: measured(backend, key)?.tokensPerSecond,
            })),
            { group: `${preset} batch ${batch}`, implementation: 'PyTorch', value: peerRate(key, batch) },
          ]),
          'generated tokens/s',
        ),
        raw: { settings, backends, peer, peerRuns },
      }
    } finally {
      rmSync(inputsDirectory, { recursive: true, force: true })
    }
  },
})
