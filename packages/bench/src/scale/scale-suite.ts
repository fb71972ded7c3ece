import { existsSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { LudicError } from '@ludic/core'
import { z } from 'zod'
import { numberCell, type BenchCell, type BenchReport } from '../bench-report.js'
import { defineBenchSuite, startClock, type BenchContext } from '../bench-suite.js'
import { describeMachine } from '../machine.js'
import { isChildError, runJsonProcess, type ChildAnswer } from '../perf/child-process.js'
import { builtEntryPath, peersDirectory } from '../perf/package-paths.js'
import { findPeerPython, type PeerPython } from '../perf/python-peer.js'
import { speedChart } from '../perf/train-step-suite.js'
import { scaleWorks, type ScaleMeasurement, type ScaleShape, type ScaleWork } from './measure-scale.js'
import { scaleChildProgram, type ScaleChildTask } from './scale-child.js'

const scaleBackends = ['tensorflow', 'wasm', 'cpu'] as const
type ScaleBackend = (typeof scaleBackends)[number]

export const scaleOptionsSchema = z.strictObject({
  /** Backends, each measurement in its own process. Default: the native one (`tensorflow`); `wasm` is optional. */
  backends: z.array(z.enum(scaleBackends)).min(1).default(['tensorflow']),
  /** Decoder layers of the checkpoint (the 0.6B shape has 28; fewer make a quicker, smaller run). Default 28. */
  layers: z.number().int().min(1).max(28).default(28),
  /** Width (`hidden_size`). Default 1024, Qwen3-0.6B's. */
  hiddenSize: z.number().int().positive().max(8192).default(1024),
  /** MLP width (`intermediate_size`). Default 3072. */
  intermediateSize: z.number().int().positive().max(32768).default(3072),
  /** Query heads. Default 16. */
  attentionHeads: z.number().int().positive().max(128).default(16),
  /** Key/value heads (grouped-query attention). Default 8. */
  keyValueHeads: z.number().int().positive().max(128).default(8),
  /** Width of one head. Default 128. */
  headDim: z.number().int().positive().max(512).default(128),
  /** Vocabulary. Default 151,936, Qwen3's. */
  vocabSize: z.number().int().min(256).max(262_144).default(151_936),
  /** Seed of the random bf16 weights and of the token ids. Default 0. */
  seed: z.number().int().nonnegative().default(0),
  /**
   * Which work to measure (each in its own process, Ludic and PyTorch). `lora-recompute` is Ludic's LoRA step with
   * `recomputeLayers`, beside the same PyTorch + PEFT step as `lora` (measured once). Default all five.
   */
  works: z
    .array(z.enum(scaleWorks))
    .min(1)
    .default([...scaleWorks]),
  /** Batch sizes of the generation. Default 1 and 8. */
  decodeBatchSizes: z.array(z.number().int().min(1).max(8)).min(1).default([1, 8]),
  /** New tokens per generated sequence. Default 32 (`quick`: 4). */
  newTokens: z.number().int().positive().max(512).optional(),
  /** Timed repetitions after one warm-up. Default 3 (`quick`: 1). */
  repetitions: z.number().int().positive().max(100).optional(),
  /** Fewer tokens and repetitions (a smoke run: figures are noisier). Default false. */
  quick: z.boolean().default(false),
  /**
   * Thread counts of the PyTorch peer; the fastest counts (on a busy 2-core machine PyTorch's OpenMP barriers can make
   * 2 threads many times slower than 1). Default 2 and 1.
   */
  peerThreads: z.array(z.number().int().positive().max(256)).min(1).default([2, 1]),
  /** The peer's Python (torch, transformers, peft). Default: `LUDIC_PEER_PYTHON`, else `.venv-peer/bin/python` here or above. */
  peerPython: z.string().min(1).optional(),
  /**
   * Where checkpoints are built, one folder per shape and seed, kept and reused by later runs. Default
   * `<os temporary folder>/ludic-bench-scale`.
   */
  cacheDirectory: z.string().min(1).optional(),
  /**
   * A file every build and measurement process holds an exclusive lock on while it runs (`flock`, util-linux), so
   * that large processes of this and other runs sharing the lock never overlap. Default: none.
   */
  lockFile: z.string().min(1).optional(),
})
export type ScaleOptions = z.input<typeof scaleOptionsSchema>
type ParsedScaleOptions = z.output<typeof scaleOptionsSchema>

/** Hugging Face config fields of the checkpoint (the Qwen3-0.6B configuration with the chosen sizes). */
export function scaleShape(options: ParsedScaleOptions): ScaleShape {
  return {
    vocab_size: options.vocabSize,
    hidden_size: options.hiddenSize,
    intermediate_size: options.intermediateSize,
    num_hidden_layers: options.layers,
    num_attention_heads: options.attentionHeads,
    num_key_value_heads: options.keyValueHeads,
    head_dim: options.headDim,
    hidden_act: 'silu',
    max_position_embeddings: 40960,
    rms_norm_eps: 1e-6,
    rope_theta: 1_000_000,
    tie_word_embeddings: true,
    attention_bias: false,
    // Qwen3's special tokens, or the vocabulary's last two ids when a smaller vocabulary has no room for them.
    bos_token_id: options.vocabSize > 151_645 ? 151_643 : options.vocabSize - 2,
    eos_token_id: options.vocabSize > 151_645 ? 151_645 : options.vocabSize - 1,
  }
}

/** The checkpoint's folder name: the shape and seed, so each shape is built once. */
function checkpointName(options: ParsedScaleOptions): string {
  const standard = options.hiddenSize === 1024 && options.intermediateSize === 3072 && options.attentionHeads === 16
  const sizes = standard && options.keyValueHeads === 8 && options.headDim === 128 && options.vocabSize === 151_936
  const shape = sizes
    ? ''
    : `-h${options.hiddenSize}-i${options.intermediateSize}-q${options.attentionHeads}-kv${options.keyValueHeads}-d${options.headDim}-v${options.vocabSize}`
  return `qwen3-0.6b-${options.layers}-layers${shape}-seed-${options.seed}`
}

const timeout = 30 * 60_000

/**
 * `scale`: a Qwen3-0.6B-shaped checkpoint (28 layers, d=1024, GQA 16/8, head 128, vocabulary 151,936, tied; random
 * bf16 weights, seeded) built by the PyTorch peer from its configuration (`transformers`' `save_pretrained`,
 * sharded safetensors), then Ludic beside PyTorch + PEFT on it: load (bf16 → float32), prefill 1 × 128, decode
 * tokens/s at batch 1 and 8, one LoRA r=16 (q, v) AdamW step on 4 × 128 tokens, and each one's peak resident
 * memory — every measurement in its own process, so the peaks are separate.
 */
export const scaleSuite = defineBenchSuite({
  name: 'scale',
  description: 'A Qwen3-0.6B-shaped checkpoint: load, prefill, decode and a LoRA step, each in its own process, time and peak memory beside PyTorch + PEFT.',
  optionsSchema: scaleOptionsSchema,
  async run(options, context: BenchContext): Promise<BenchReport> {
    const clock = startClock()
    const log = context.log ?? (() => {})
    const signal = context.signal === undefined ? {} : { signal: context.signal }
    const repetitions = options.repetitions ?? (options.quick ? 1 : 3)
    const newTokens = options.newTokens ?? (options.quick ? 4 : 32)
    const warmup = 1
    const directory = join(options.cacheDirectory ?? join(tmpdir(), 'ludic-bench-scale'), checkpointName(options))
    const shape = scaleShape(options)
    const locked = (command: string, args: readonly string[]): [string, string[]] =>
      options.lockFile === undefined ? [command, [...args]] : ['flock', [options.lockFile, command, ...args]]
    const run = <Result>(command: string, args: readonly string[]): Promise<ChildAnswer<Result>> => {
      const [program, programArgs] = locked(command, args)
      return runJsonProcess<Result>(program, programArgs, { timeoutMs: timeout, onLine: log, ...signal })
    }
    const entryPath = pathToFileURL(builtEntryPath('index')).href
    const child = <Result>(task: ScaleChildTask) => {
      const env = { ...process.env }
      delete env.LUDIC_BACKEND
      delete env.LUDIC_WASM_THREADS
      const [program, programArgs] = locked(process.execPath, ['--input-type=module', '-e', scaleChildProgram, entryPath, JSON.stringify(task)])
      return runJsonProcess<Result>(program, programArgs, { timeoutMs: timeout, env, onLine: log, ...signal })
    }

    let peer: PeerPython = await findPeerPython(options.peerPython)

    // The checkpoint: built by the peer from the configuration (kept for later runs), else by Ludic.
    const peerScript = join(peersDirectory(), 'scale.py')
    let builtBy = 'PyTorch (transformers save_pretrained)'
    let buildError: string | undefined
    if ('python' in peer) {
      log(`checkpoint ${directory}…`)
      const built = await run<{ built: boolean; transformers: string; peft: string }>(peer.python, [
        peerScript,
        'build',
        '--directory',
        directory,
        '--layers',
        String(options.layers),
        '--seed',
        String(options.seed),
        '--shape',
        JSON.stringify(shape),
      ])
      // The build imports transformers and peft too: a peer without them is unavailable, saying so.
      if (isChildError(built)) buildError = `${peer.python} could not build the checkpoint (needs torch, transformers and peft): ${built.error.slice(-200)}`
      else peer = { python: peer.python, torch: `${peer.torch}, transformers ${built.transformers}, peft ${built.peft}` }
    }
    if (!('python' in peer) || buildError !== undefined) {
      if (!existsSync(join(directory, 'inputs.json'))) {
        builtBy = 'Ludic (createModel + saveModel bfloat16), the peer being unavailable'
        const built = await child<{ built: boolean }>({ task: 'build', directory, shape, seed: options.seed })
        if (isChildError(built))
          throw new LudicError(`scale: no checkpoint could be built in ${directory}: ${[buildError, built.error].filter(Boolean).join('; ')}`)
      } else builtBy = 'an earlier run (reused)'
    }
    if ('python' in peer && buildError !== undefined) peer = { unavailable: buildError }
    const parameters = countParameters(directory)

    /** Where a job's (or a work's) peer runs are kept: `lora-recompute` has no PyTorch twin of its own; it is set beside `lora`'s. */
    const peerKeyOf = (key: string) => (key === 'lora-recompute' ? 'lora' : key)
    // Every measurement: one process per side, work and backend (and peer thread count).
    interface Job {
      key: string
      what: ScaleWork
      batch: number
    }
    const jobs: Job[] = options.works.flatMap((what): Job[] =>
      what === 'decode' ? options.decodeBatchSizes.map((batch) => ({ key: `decode-${batch}`, what, batch })) : [{ key: what, what, batch: 1 }],
    )
    const ludic: Record<string, Record<string, ChildAnswer<ScaleMeasurement>>> = {}
    const peerRuns: Record<string, Record<string, ChildAnswer<ScaleMeasurement>>> = {}
    const total = jobs.length * (options.backends.length + ('python' in peer ? options.peerThreads.length : 0))
    let done = 0
    for (const job of jobs) {
      for (const backend of options.backends) {
        context.signal?.throwIfAborted()
        log(`Ludic ${backend}: ${job.key}…`)
        ludic[job.key] ??= {}
        ludic[job.key]![backend] = await child<ScaleMeasurement>({
          task: 'measure',
          backend,
          directory,
          what: job.what,
          batch: job.batch,
          newTokens,
          warmup,
          repetitions,
        })
        context.onProgress?.(++done, total, `Ludic ${backend} ${job.key}`)
      }
      const peerKey = peerKeyOf(job.key)
      if ('python' in peer && peerRuns[peerKey] === undefined) {
        for (const threads of options.peerThreads) {
          context.signal?.throwIfAborted()
          log(`PyTorch (${threads} threads): ${job.key}…`)
          peerRuns[peerKey] ??= {}
          peerRuns[peerKey]![String(threads)] = await run<ScaleMeasurement>(peer.python, [
            peerScript,
            'measure',
            '--directory',
            directory,
            '--what',
            peerKeyOf(job.what),
            '--batch',
            String(job.batch),
            '--new-tokens',
            String(newTokens),
            '--warmup',
            String(warmup),
            '--repetitions',
            String(repetitions),
            '--threads',
            String(threads),
          ])
          context.onProgress?.(++done, total, `PyTorch ${job.key}`)
        }
      }
    }

    const ludicOf = (key: string, backend: ScaleBackend): ScaleMeasurement | undefined => {
      const answer = ludic[key]?.[backend]
      return answer === undefined || isChildError(answer) ? undefined : answer
    }
    const ludicFailure = (key: string, backend: ScaleBackend): string => {
      const answer = ludic[key]?.[backend]
      return `not measured: ${answer !== undefined && isChildError(answer) ? answer.error.slice(-200) : 'not run'}`
    }
    /** The peer's fastest run of a job (least seconds; most tokens/s for decoding). */
    const peerOf = (key: string): ScaleMeasurement | undefined => {
      const runs = Object.values(peerRuns[peerKeyOf(key)] ?? {}).filter((answer): answer is ScaleMeasurement => !isChildError(answer))
      const better = (a: ScaleMeasurement, b: ScaleMeasurement) =>
        a.tokensPerSecond !== undefined ? a.tokensPerSecond > b.tokensPerSecond! : a.seconds < b.seconds
      return runs.reduce<ScaleMeasurement | undefined>((best, answer) => (best === undefined || better(answer, best) ? answer : best), undefined)
    }
    const peerMissing = (key: string): string => {
      if ('unavailable' in peer) return `peer unavailable: ${peer.unavailable}`
      const failure = Object.values(peerRuns[peerKeyOf(key)] ?? {}).find(isChildError)
      return `peer unavailable: PyTorch failed (${failure?.error.slice(-200) ?? 'not run'})`
    }

    const gib = (bytes: number | undefined) => (bytes === undefined || bytes <= 0 ? undefined : bytes / 2 ** 30)
    const labels: Record<string, string> = {
      load: 'load (bf16 safetensors → float32), s',
      prefill: `prefill 1 × ${128}, s`,
      lora: 'LoRA r=16 on q, v: one AdamW step on 4 × 128 tokens, s',
      'lora-recompute': 'the same LoRA step, Ludic with recomputeLayers, s',
    }
    const label = (key: string) => labels[key] ?? `decode batch ${key.slice('decode-'.length)}, ${newTokens} new tokens, tokens/s`
    const row = (
      name: string,
      value: (m: ScaleMeasurement) => number | undefined,
      key: string,
      ratio: (ours: number, peer: number) => number,
      digits: number,
    ): BenchCell[] => {
      const peerValue = (() => {
        const entry = peerOf(key)
        return entry === undefined ? undefined : value(entry)
      })()
      return [
        name,
        ...options.backends.map((backend): BenchCell => {
          const entry = ludicOf(key, backend)
          return entry === undefined ? ludicFailure(key, backend) : numberCell(value(entry), digits)
        }),
        peerValue === undefined ? peerMissing(key) : numberCell(peerValue, digits),
        ...options.backends.map((backend): BenchCell => {
          const entry = ludicOf(key, backend)
          if (peerValue === undefined) return peerMissing(key)
          const ours = entry === undefined ? undefined : value(entry)
          if (ours === undefined || !(ours > 0) || !(peerValue > 0)) return 'not measured'
          return Number(ratio(ours, peerValue).toFixed(2))
        }),
      ]
    }
    // Speed: above 1 Ludic is faster (tokens/s ours / peer, seconds peer / ours). Memory: ours / peer, below 1 is less.
    const faster = (ours: number, peerValue: number) => ours / peerValue
    const quicker = (ours: number, peerValue: number) => peerValue / ours
    const rows: BenchCell[][] = jobs.map((job) =>
      job.what === 'decode' ? row(label(job.key), (m) => m.tokensPerSecond, job.key, faster, 2) : row(label(job.key), (m) => m.seconds, job.key, quicker, 3),
    )
    const memoryRows: BenchCell[][] = jobs.map((job) => row(job.key, (m) => gib(m.peakRssBytes), job.key, faster, 2))
    if (options.works.includes('lora')) rows.push(row('peak resident memory of the LoRA step process, GiB', (m) => gib(m.peakRssBytes), 'lora', faster, 2))
    if (options.works.includes('lora-recompute'))
      rows.push(row('peak resident memory, LoRA step with recomputeLayers, GiB', (m) => gib(m.peakRssBytes), 'lora-recompute', faster, 2))

    const prefillCheck = (() => {
      const peerEntry = peerOf('prefill')
      const sums = options.backends.map((backend) => `${backend} ${ludicOf('prefill', backend)?.lastLogitsSum?.toFixed(3) ?? '—'}`)
      return peerEntry?.lastLogitsSum === undefined
        ? []
        : [`Sum of the prompt's last logits: ${sums.join(', ')}; PyTorch ${peerEntry.lastLogitsSum.toFixed(3)} (the same model on both sides).`]
    })()
    const loraCheck = (() => {
      const peerEntry = peerOf('lora')
      const losses = options.backends.map((backend) => `${backend} ${ludicOf('lora', backend)?.initialLoss?.toFixed(4) ?? '—'}`)
      return peerEntry?.initialLoss === undefined ? [] : [`First LoRA-step loss: ${losses.join(', ')}; PyTorch ${peerEntry.initialLoss.toFixed(4)}.`]
    })()
    const unstable = jobs.flatMap((job) =>
      options.backends.filter((backend) => ludicOf(job.key, backend)?.tensorsStable === false).map((backend) => `${backend} ${job.key}`),
    )
    const devices = [
      ...new Set(
        Object.values(ludic).flatMap((byBackend) => Object.values(byBackend).flatMap((answer) => (isChildError(answer) ? [] : [answer.device ?? '']))),
      ),
    ]
    const peerThreadsUsed = Object.fromEntries(
      jobs.map((job) => {
        const entry = peerOf(job.key)
        return [job.key, entry?.threads]
      }),
    )
    const modelTitle = `Qwen3-0.6B-shaped checkpoint: ${options.layers} layers, d=${options.hiddenSize}, MLP ${options.intermediateSize}, GQA ${options.attentionHeads}/${options.keyValueHeads}, head ${options.headDim}, vocabulary ${options.vocabSize}, tied, random bf16 weights (seed ${options.seed})${parameters === undefined ? '' : `, ${(parameters / 1e6).toFixed(1)}M parameters`}`
    return {
      suite: 'scale',
      title: 'Scale: a 0.6B-shaped model, Ludic beside PyTorch + PEFT',
      startedAt: clock.startedAt,
      durationSeconds: clock.seconds(),
      machine: describeMachine(options.backends.join(', ')),
      peers: {
        'PyTorch + PEFT':
          'unavailable' in peer
            ? { available: false, reason: peer.unavailable }
            : {
                available: true,
                version: `torch ${peer.torch}`,
                reason: `CPU, ${peer.python}, ${options.peerThreads.join(' and ')} thread(s), the faster run counts`,
              },
      },
      tables: [
        {
          title: modelTitle,
          columns: ['work', ...options.backends.map((backend) => `Ludic ${backend}`), 'PyTorch', ...options.backends.map((backend) => `${backend} vs PyTorch`)],
          rows,
          notes: [
            'Speed ratios (time and tokens/s rows): PyTorch time / Ludic time, or Ludic tokens/s / PyTorch tokens/s — above 1 Ludic is faster. Memory: Ludic / PyTorch — below 1 Ludic needs less.',
            `Each figure is its own process: the checkpoint loaded as float32, then ${warmup} warm-up and the median of ${repetitions} timed repetition(s). Load is one from_pretrained / loadModel call; prefill computes the last position's logits; decoding samples at temperature 1 with a key/value cache after an 8-token prompt; the LoRA step (alpha 32) scores the last 64 tokens of each sequence (−mean(advantage · Σ log p)) and takes one AdamW step.`,
            `Checkpoint built by ${builtBy} in ${directory}.`,
            ...prefillCheck,
            ...loraCheck,
            `Ludic: ${devices.join('; ') || 'not measured'}${unstable.length > 0 ? `; numTensors grew during ${unstable.join(', ')}` : '; numTensors unchanged across the timed repetitions'}. PyTorch threads of the counted runs: ${Object.entries(
              peerThreadsUsed,
            )
              .map(([key, threads]) => `${key} ${threads ?? '—'}`)
              .join(', ')}.`,
          ],
        },
        {
          title: 'Peak resident memory of each measurement process, GiB',
          columns: [
            'process',
            ...options.backends.map((backend) => `Ludic ${backend}`),
            'PyTorch',
            ...options.backends.map((backend) => `${backend} / PyTorch`),
          ],
          rows: memoryRows,
          notes: ['VmHWM (Ludic) and ru_maxrss (PyTorch): the most memory each process held at once, loading included.'],
        },
      ],
      chart: speedChart(
        'Scale: time per work (s)',
        jobs
          .filter((job) => job.what !== 'decode')
          .flatMap((job) => [
            ...options.backends.map((backend) => ({ group: job.key, implementation: `Ludic ${backend}`, value: ludicOf(job.key, backend)?.seconds })),
            { group: job.key, implementation: 'PyTorch', value: peerOf(job.key)?.seconds },
          ]),
        'seconds',
      ),
      raw: { options, directory, shape, ludic, peer, peerRuns },
    }
  },
})

/** The checkpoint's parameter count from its safetensors index or headers' sizes, if it can be read cheaply. */
function countParameters(directory: string): number | undefined {
  try {
    const index = JSON.parse(readFileSync(join(directory, 'model.safetensors.index.json'), 'utf8')) as {
      metadata?: { total_size?: number; total_parameters?: number }
    }
    if (typeof index.metadata?.total_parameters === 'number') return index.metadata.total_parameters
    return typeof index.metadata?.total_size === 'number' ? index.metadata.total_size / 2 : undefined
  } catch {
    return undefined
  }
}
