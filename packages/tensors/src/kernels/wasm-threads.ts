import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { BackendError, InvalidArgumentError } from '@ludic/core'
import { webAssembly } from './webassembly-api.js'

/**
 * Runs TensorFlow.js's multithreaded WebAssembly build (`tfjs-backend-wasm-threaded-simd.wasm`,
 * Emscripten pthreads on a shared memory) under Node, where tfjs-backend-wasm 4.22 refuses to: its
 * `WASM_HAS_MULTITHREAD_SUPPORT` flag is hard-wired to false under Node (tensorflow/tfjs#3830). The
 * build itself supports Node (its glue uses `worker_threads`); three things stand in the way, and
 * this module works around each (see the package README for the evidence):
 *
 * 1. The stock loader hands Emscripten a `blob:` URL for the pthread worker script, which Node's
 *    `Worker` rejects (ERR_WORKER_PATH). Here the script (shipped as a string in
 *    `wasm-out/tfjs-backend-wasm-threaded-simd.worker.js`) is written once to the temp directory.
 * 2. The C++ side caps its thread pool at `emscripten_num_logical_cores() / 2`, and the Node glue
 *    answers that with `os.cpus().length`: 1 thread on a 2-core machine. Here the import is answered
 *    with twice the wanted thread count.
 * 3. Emscripten `ref()`s the worker of every running pthread; the thread pool's workers never exit, so
 *    Node would never exit either. Here they are `unref()`ed.
 * 4. Node workers inherit the parent's `execArgv` (Emscripten passes no options): a parent started
 *    with `--input-type=module --eval` makes every worker fail, and `--import tsx` makes each one load
 *    tsx. Here the workers are created with an empty `execArgv` (they only run Emscripten's script).
 */

const require = createRequire(import.meta.url)
const workerThreads = require('node:worker_threads') as { Worker: new (filename: string, options?: object) => object }
/** tfjs-backend-wasm registers its backend with this priority. */
const wasmPriority = 2
/** The C++ side never uses more (the Emscripten pool holds 8 workers). */
const maximumThreads = 8

/**
 * Threads the `wasm` backend should compute with: `LUDIC_WASM_THREADS` when set (2 to 8: the
 * multithreaded build; `max`: the available parallelism, at most 8), else 1 (the single-threaded SIMD
 * build). Threads are opt-in because XNNPACK hands every op, however small, to its thread pool: on 2
 * cores large matmuls run faster, but a small model's decode step runs slower (figures in the package README, section Threads).
 */
export function wantedWasmThreads(requested: number | 'max' = 1): number {
  const value = process.env.LUDIC_WASM_THREADS
  const wanted = value === undefined || value === '' ? requested : value
  if (wanted === 'max') return Math.min(availableParallelism(), maximumThreads)
  const threads = Number(wanted)
  if (!Number.isInteger(threads) || threads < 1 || threads > maximumThreads) {
    const argument = value === undefined || value === '' ? 'options.wasmThreads' : 'LUDIC_WASM_THREADS'
    throw new InvalidArgumentError({ argument, value: wanted, message: `must be max or an integer from 1 to ${maximumThreads}` })
  }
  return threads
}

interface EmscriptenWorker {
  unref(): void
}

interface ThreadedModule {
  cwrap(name: string, returnType: string | null, argumentTypes: string[]): (...args: number[]) => number
  PThread?: { runningWorkers: EmscriptenWorker[]; unusedWorkers: EmscriptenWorker[] }
  tfjs?: Record<string, unknown>
}

type ThreadedFactory = (config: {
  locateFile(path: string, prefix: string): string
  mainScriptUrlOrBlob: string
  instantiateWasm(imports: { env: Record<string, unknown> }, receiveInstance: (instance: unknown, module: unknown) => void): object
}) => Promise<ThreadedModule>

let registeredThreads: number | undefined

/** The thread count the `wasm` backend factory was replaced for, if it was. */
export function threadedWasmRegistration(): number | undefined {
  return registeredThreads
}

/**
 * Replaces the `wasm` backend factory by one that starts the multithreaded build with `threads`
 * threads (the calling thread included), falling back to the stock factory (single-threaded SIMD
 * build) if that fails. Call before the `wasm` backend is first started; does nothing (returns false)
 * when it already runs, when the factory was already replaced, or without `SharedArrayBuffer`.
 */
export async function registerThreadedWasmBackend(threads: number): Promise<boolean> {
  if (!Number.isInteger(threads) || threads < 2) {
    throw new BackendError({ backend: 'wasm', message: `the multithreaded build needs 2 threads or more (asked for ${threads})` })
  }
  if (registeredThreads !== undefined || tf.engine().registry.wasm !== undefined) return false
  // Without shared memory the threaded build cannot start: keep the stock (single-threaded) factory.
  if (typeof SharedArrayBuffer === 'undefined') return false
  const wasmPackage = await import('@tensorflow/tfjs-backend-wasm')
  const mainScript = require.resolve('@tensorflow/tfjs-backend-wasm/wasm-out/tfjs-backend-wasm-threaded-simd.js')
  const binaryPath = join(dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm')), 'tfjs-backend-wasm-threaded-simd.wasm')
  const workerPath = writeWorkerScript()
  const factory = require(mainScript) as ThreadedFactory
  const stockFactory = tf.findBackendFactory('wasm')

  const startThreaded = async (): Promise<tf.KernelBackend> => {
    let failInstantiation: (error: unknown) => void = () => {}
    const instantiationFailed = new Promise<never>((_, reject) => {
      failInstantiation = reject
    })
    const started = withWorkersWithoutExecArgv(() =>
      factory({
        locateFile: (path) => (path.endsWith('.worker.js') ? workerPath : path.endsWith('.wasm') ? binaryPath : path),
        mainScriptUrlOrBlob: mainScript,
        instantiateWasm: (imports, receiveInstance) => {
          // The thread pool holds min(asked, 8, logical cores / 2) threads: answer for `threads`.
          imports.env.emscripten_num_logical_cores = () => 2 * threads
          webAssembly.instantiate(readFileSync(binaryPath), imports).then(({ instance, module }) => receiveInstance(instance, module), failInstantiation)
          return {}
        },
      }),
    )
    const module = await Promise.race([started, instantiationFailed])
    module.tfjs = {
      init: module.cwrap('init', null, []),
      initWithThreadsCount: module.cwrap('init_with_threads_count', null, ['number']),
      getThreadsCount: module.cwrap('get_threads_count', 'number', []),
      registerTensor: module.cwrap('register_tensor', null, ['number', 'number', 'number']),
      disposeData: module.cwrap('dispose_data', null, ['number']),
      dispose: module.cwrap('dispose', null, []),
    }
    wasmPackage.setThreadsCount(threads)
    const backend = new wasmPackage.BackendWasm(module as unknown as ConstructorParameters<typeof wasmPackage.BackendWasm>[0])
    // The pool's threads now wait for work forever: let Node exit around them.
    for (const worker of [...(module.PThread?.runningWorkers ?? []), ...(module.PThread?.unusedWorkers ?? [])]) worker.unref()
    return backend
  }

  tf.removeBackend('wasm')
  tf.registerBackend(
    'wasm',
    async () => {
      try {
        return await startThreaded()
      } catch (error) {
        if (stockFactory === null) throw error
        registeredThreads = undefined
        return await stockFactory()
      }
    },
    wasmPriority,
  )
  registeredThreads = threads
  return true
}

/**
 * Runs `start` (which creates Emscripten's pool of pthread workers synchronously, through the
 * `worker_threads` module's `Worker`) with that constructor defaulting to an empty `execArgv`.
 */
function withWorkersWithoutExecArgv<T>(start: () => T): T {
  const original = workerThreads.Worker
  workerThreads.Worker = class PthreadWorker extends original {
    constructor(filename: string, options?: object) {
      super(filename, { execArgv: [], ...options })
    }
  }
  try {
    return start()
  } finally {
    workerThreads.Worker = original
  }
}

/** Writes the pthread worker script to the temp directory (once per content) and returns its path. */
function writeWorkerScript(): string {
  const { wasmWorkerContents } = require('@tensorflow/tfjs-backend-wasm/wasm-out/tfjs-backend-wasm-threaded-simd.worker.js') as {
    wasmWorkerContents: string
  }
  // The string escapes were lost when the script became a template literal: restore `\n` in strings.
  const script = wasmWorkerContents.replace(/\n/g, '\\n')
  const hash = createHash('sha256').update(script).digest('hex').slice(0, 16)
  const path = join(tmpdir(), `ludic-tfjs-wasm-threaded-simd-${hash}.worker.js`)
  if (!existsSync(path)) {
    const partial = `${path}.${process.pid}.partial`
    writeFileSync(partial, script)
    renameSync(partial, path)
  }
  return path
}
