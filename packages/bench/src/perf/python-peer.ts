import { existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { runJsonProcess, type ChildAnswer, isChildError } from './child-process.js'
import { peersDirectory } from './package-paths.js'

/** The PyTorch peer's interpreter, or why there is none. */
export type PeerPython = { python: string; torch: string } | { unavailable: string }

/** `.venv-peer/bin/python` in `directory` or the nearest folder above it that has one. */
function findVenvPython(directory: string): string | undefined {
  let current = resolve(directory)
  for (;;) {
    const candidate = join(current, '.venv-peer', 'bin', 'python')
    if (existsSync(candidate)) return candidate
    const parent = dirname(current)
    if (parent === current) return undefined
    current = parent
  }
}

/**
 * The Python that runs the PyTorch peers: `given` (a suite's `peerPython` option), else `LUDIC_PEER_PYTHON`, else
 * `.venv-peer/bin/python` in the working directory or a folder above it (`python3 -m venv .venv-peer &&
 * .venv-peer/bin/pip install torch`). It must import torch; when it cannot, the reason says so.
 */
export async function findPeerPython(given?: string): Promise<PeerPython> {
  const configured = given ?? (process.env.LUDIC_PEER_PYTHON === '' ? undefined : process.env.LUDIC_PEER_PYTHON)
  const python = configured ?? findVenvPython(process.cwd())
  if (python === undefined) return { unavailable: 'no Python with torch: LUDIC_PEER_PYTHON is not set and there is no .venv-peer here or above' }
  const probe = await runJsonProcess<{ torch: string }>(python, ['-c', 'import json, torch; print(json.dumps({"torch": torch.__version__}))'], {
    timeoutMs: 120_000,
  })
  if (isChildError(probe)) return { unavailable: `${python} cannot import torch (${probe.error.split('\n').at(-1)?.slice(0, 200)})` }
  return { python, torch: probe.torch }
}

/** Runs a peer script of `peers/` with `args`; its last JSON line, or the error. */
export function runPeerScript<Result>(
  python: string,
  script: string,
  args: readonly string[],
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<ChildAnswer<Result>> {
  return runJsonProcess<Result>(python, [join(peersDirectory(), script), ...args], { timeoutMs, ...(signal === undefined ? {} : { signal }) })
}

/** Peer runs at several thread counts, and the fastest. */
export interface PeerRuns<Result> {
  byThreads: Record<string, ChildAnswer<Result>>
  /** The thread count of the fastest successful run; undefined when none succeeded. */
  best: number | undefined
}

/**
 * Runs the peer once per thread count and keeps the fastest by `timeOf`: on a busy machine PyTorch's OpenMP
 * barriers wait on descheduled threads and 2 threads can be slower than 1, so the ratio is taken against the
 * faster run (never flattering Ludic).
 */
export async function runPeerThreads<Result>(
  python: string,
  script: string,
  args: readonly string[],
  threads: readonly number[],
  timeOf: (result: Result) => number,
  signal?: AbortSignal,
): Promise<PeerRuns<Result>> {
  const byThreads: Record<string, ChildAnswer<Result>> = {}
  let best: number | undefined
  for (const count of threads) {
    const result = await runPeerScript<Result>(python, script, [...args, '--threads', String(count)], 30 * 60_000, signal)
    byThreads[String(count)] = result
    if (isChildError(result)) continue
    const bestResult = best === undefined ? undefined : (byThreads[String(best)] as Result)
    if (bestResult === undefined || timeOf(result) < timeOf(bestResult)) best = count
  }
  return { byThreads, best }
}

export function bestPeerRun<Result>(runs: PeerRuns<Result> | undefined): Result | undefined {
  return runs === undefined || runs.best === undefined ? undefined : (runs.byThreads[String(runs.best)] as Result)
}

/** The first error of the runs (why the peer has no figure), or `not run`. */
export function peerRunError(runs: PeerRuns<unknown> | undefined): string {
  if (runs === undefined) return 'not run'
  return Object.values(runs.byThreads).find(isChildError)?.error ?? 'not run'
}
