/**
 * Shared by the `train-step` and `decode` benchmarks: the machine description, medians, child processes
 * (one backend per process), the PyTorch peer, the inputs both sides read, and the result files.
 *
 * The benchmarks import `@ludic/core` and `@ludic/tensors` from their builds (the tensors build bundles
 * tfjs-core's gradients, which plain Node cannot load from tfjs-core's sources) and the model from source.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import * as tf from '@tensorflow/tfjs-core'
import { createRandom } from '@ludic/core'
import { writeSafetensorsFile } from '@ludic/tensors'
import type { CausalLanguageModel } from '../src/index.js'

export const repositoryRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')
export const peersDirectory = join(dirname(fileURLToPath(import.meta.url)), 'peers')

export type BenchBackend = 'wasm' | 'tensorflow'
export const benchBackends: readonly BenchBackend[] = ['wasm', 'tensorflow']

/** Command-line options shared by both benchmarks. */
export interface BenchArguments {
  presets: ('tiny' | 'small' | 'base')[]
  backends: BenchBackend[]
  repetitions: number | undefined
  quick: boolean
  child: BenchBackend | undefined
  /**
   * Thread counts the peer runs with (default 2 and 1): the spec's peer uses 2, but on a busy 2-core machine
   * PyTorch's OpenMP barriers wait on descheduled threads and 2 threads can be 3× slower than 1, so the
   * ratios are taken against the faster of the runs (never flattering Ludic).
   */
  peerThreads: number[]
}

export function parseBenchArguments(argv: readonly string[]): BenchArguments {
  const value = (flag: string): string | undefined => {
    const index = argv.indexOf(flag)
    return index >= 0 ? argv[index + 1] : undefined
  }
  const presets = (value('--presets') ?? 'tiny,small,base').split(',') as BenchArguments['presets']
  for (const preset of presets) if (!['tiny', 'small', 'base'].includes(preset)) throw new Error(`unknown preset ${preset}`)
  const backends = (value('--backends') ?? benchBackends.join(',')).split(',') as BenchBackend[]
  for (const backend of backends) if (!benchBackends.includes(backend)) throw new Error(`unknown backend ${backend} (${benchBackends.join(', ')})`)
  const repetitions = value('--repetitions')
  return {
    presets,
    backends,
    repetitions: repetitions === undefined ? undefined : Number(repetitions),
    quick: argv.includes('--quick'),
    child: value('--child') as BenchBackend | undefined,
    peerThreads: (value('--peer-threads') ?? '2,1').split(',').map(Number),
  }
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

export function machine(): Record<string, string | number> {
  let info = ''
  try {
    info = readFileSync('/proc/cpuinfo', 'utf8')
  } catch {
    // not Linux
  }
  const model = /^model name\s*:\s*(.*)$/m.exec(info)?.[1] ?? cpus()[0]?.model ?? 'unknown'
  const flags = (/^flags\s*:\s*(.*)$/m.exec(info)?.[1] ?? '').split(' ')
  return {
    cores: availableParallelism(),
    cpu: model,
    simdFlags: flags.filter((flag) => /^(avx|avx2|fma|avx512f|avx512bw|avx512_vnni|amx_tile)$/.test(flag)).join(' '),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    loadAverage: Number(loadavg()[0]!.toFixed(2)),
    node: process.version,
    tfjs: tf.version_core,
  }
}

export function describeMachine(info: Record<string, string | number>): string {
  return `${info.cpu}, ${info.cores} cores, flags: ${info.simdFlags}; ${info.memoryGiB} GiB; Node ${info.node}, tfjs ${info.tfjs}; load average ${info.loadAverage}`
}

/** Whether a backend's package is installed (it may still fail to start; the child reports that). */
export function backendInstalled(backend: BenchBackend): boolean {
  if (backend === 'wasm') return true
  try {
    createRequire(import.meta.url).resolve('@tensorflow/tfjs-node')
    return true
  } catch {
    return false
  }
}

/**
 * Runs this script again in a child process for one backend (a process holds one backend; isolating them
 * also keeps one backend's memory and threads from skewing the other) and returns its last JSON line.
 */
export function runChild<Result>(script: string, backend: BenchBackend, argv: readonly string[], timeoutMs: number): Result | { error: string } {
  const child = spawnSync(process.execPath, [...process.execArgv, script, ...argv, '--child', backend], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    timeout: timeoutMs,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  process.stderr.write(child.stderr)
  const line = child.stdout
    .split('\n')
    .reverse()
    .find((text) => text.startsWith('{'))
  if (child.status !== 0 || line === undefined) {
    const reason = child.error?.message ?? (child.stderr || child.stdout).trim().split('\n').slice(-3).join(' ')
    return { error: reason || `exit status ${child.status}` }
  }
  return JSON.parse(line) as Result
}

/** The peer's Python: `LUDIC_PEER_PYTHON`, else `<repo>/.venv-peer/bin/python`; null with the reason when it cannot import torch. */
export function peerPython(): { python: string; torch: string } | { unavailable: string } {
  const configured = process.env.LUDIC_PEER_PYTHON
  const fallback = join(repositoryRoot, '.venv-peer', 'bin', 'python')
  const python = configured !== undefined && configured !== '' ? configured : existsSync(fallback) ? fallback : undefined
  if (python === undefined) return { unavailable: 'LUDIC_PEER_PYTHON is not set (and there is no .venv-peer)' }
  const probe = spawnSync(python, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf8', timeout: 120_000 })
  if (probe.status !== 0) return { unavailable: `${python} cannot import torch: ${(probe.stderr || probe.error?.message || '').trim().split('\n').at(-1)}` }
  return { python, torch: probe.stdout.trim() }
}

/** Runs a peer script; returns its last JSON line or the error. */
export function runPeer<Result>(python: string, script: string, argv: readonly string[], timeoutMs: number): Result | { error: string } {
  const child = spawnSync(python, [join(peersDirectory, script), ...argv], { encoding: 'utf8', maxBuffer: 1 << 26, timeout: timeoutMs })
  const line = child.stdout
    .split('\n')
    .reverse()
    .find((text) => text.startsWith('{'))
  if (child.status !== 0 || line === undefined) {
    return { error: child.error?.message ?? ((child.stderr || child.stdout).trim().split('\n').slice(-3).join(' ') || `exit status ${child.status}`) }
  }
  return JSON.parse(line) as Result
}

/** A deterministic `[rows, columns]` batch of token ids in `[0, vocab)`. */
export function tokenBatch(rows: number, columns: number, vocab: number, seed: number): Int32Array<ArrayBuffer>[] {
  const random = createRandom(seed)
  return Array.from({ length: rows }, () => Int32Array.from({ length: columns }, () => random.nextInt(vocab)))
}

/**
 * Writes what the peer needs to compute exactly what the TypeScript model computes: the model's parameters
 * (Hugging Face names), the batch tensors as `__batch__.<name>`, and the configuration as JSON.
 */
export async function writePeerInputs(
  directory: string,
  name: string,
  model: CausalLanguageModel,
  batch: Record<string, Int32Array[]>,
): Promise<{ weights: string; config: string }> {
  mkdirSync(directory, { recursive: true })
  const tensors = new Map<string, { shape: number[]; data: Float32Array } | { shape: number[]; data: Int32Array }>()
  for (const [parameterName, variable] of model.parameters()) {
    tensors.set(parameterName, { shape: [...variable.shape], data: Float32Array.from(await variable.data()) })
  }
  for (const [batchName, rows] of Object.entries(batch)) {
    const columns = rows[0]!.length
    const data = new Int32Array(rows.length * columns)
    rows.forEach((row, index) => data.set(row, index * columns))
    tensors.set(`__batch__.${batchName}`, { shape: [rows.length, columns], data })
  }
  const weights = join(directory, `${name}.safetensors`)
  const config = join(directory, `${name}.config.json`)
  await writeSafetensorsFile(weights, tensors)
  writeFileSync(config, JSON.stringify(model.config))
  return { weights, config }
}

export function writeResults(suite: string, json: unknown, markdown: string): void {
  const directory = join(repositoryRoot, 'bench-results')
  mkdirSync(directory, { recursive: true })
  writeFileSync(join(directory, `${suite}.json`), `${JSON.stringify(json, null, 2)}\n`)
  writeFileSync(join(directory, `${suite}.md`), markdown)
  console.log(`wrote bench-results/${suite}.json and bench-results/${suite}.md`)
}

/** Peer runs at several thread counts, and which was fastest. */
export interface PeerRuns<Result> {
  byThreads: Record<string, Result | { error: string }>
  /** The thread count of the fastest successful run, or undefined when none succeeded. */
  best: number | undefined
}

/** Runs the peer once per thread count and picks the fastest by `timeOf`. */
export function runPeerThreads<Result>(
  python: string,
  script: string,
  argv: readonly string[],
  threads: readonly number[],
  timeOf: (result: Result) => number,
): PeerRuns<Result> {
  const byThreads: Record<string, Result | { error: string }> = {}
  let best: number | undefined
  for (const count of threads) {
    const result = runPeer<Result>(python, script, [...argv, '--threads', String(count)], 30 * 60_000)
    byThreads[String(count)] = result
    if ('error' in (result as object)) continue
    const bestResult = best === undefined ? undefined : (byThreads[String(best)] as Result)
    if (bestResult === undefined || timeOf(result as Result) < timeOf(bestResult)) best = count
  }
  return { byThreads, best }
}

export function bestPeerRun<Result>(runs: PeerRuns<Result> | undefined): Result | undefined {
  return runs === undefined || runs.best === undefined ? undefined : (runs.byThreads[String(runs.best)] as Result)
}

export function peerError(runs: PeerRuns<unknown> | undefined): string {
  if (runs === undefined) return 'not run'
  return (
    Object.values(runs.byThreads)
      .map((result) => (result as { error?: string }).error ?? '')
      .filter((text) => text !== '')[0] ?? ''
  )
}

export function formatNumber(value: number | undefined, digits = 0): string {
  return value === undefined || !Number.isFinite(value) ? '—' : value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
}

export function formatRatio(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? '—' : `${value.toFixed(2)}×`
}
