import * as tf from '@tensorflow/tfjs-core'
import './register-gradients.js'
import { z } from 'zod'
import { BackendError, InvalidArgumentError, parseArgument } from '@ludic/core'
import { checkEngineInternals } from '../engine/engine-internals.js'
import { errorMessage, shortReason, startBackend, type RegisteredBackend } from './start-backend.js'

/** The backends Ludic can run on in a browser. */
export const backendNames = ['webgpu', 'webgl', 'wasm', 'cpu'] as const
export type BackendName = (typeof backendNames)[number]
export type BackendRequest = BackendName | 'auto'

/** The WebAssembly binaries of `@tensorflow/tfjs-backend-wasm`, which `wasmPaths` locates. */
export const wasmBinaryNames = ['tfjs-backend-wasm.wasm', 'tfjs-backend-wasm-simd.wasm', 'tfjs-backend-wasm-threaded-simd.wasm'] as const
export type WasmBinaryName = (typeof wasmBinaryNames)[number]

/** The most threads the WebAssembly backend's thread pool holds. */
const maximumWasmThreads = 8

export const initTensorsOptionsSchema = z
  .object({
    /**
     * Which backend to use. `auto` (the default) tries `wasm`, then `cpu`: for the small models a tab trains, the
     * GPU backends pay a dispatch per kernel and a read-back per sampled token; ask for `webgpu` or `webgl` by name.
     */
    backend: z.enum(['auto', ...backendNames]).default('auto'),
    /**
     * Threads for the WebAssembly backend: 1 (the default: the single-threaded SIMD build), 2–8, or `'max'`
     * (`navigator.hardwareConcurrency`, at most 8). More than one needs a cross-origin isolated page
     * (`crossOriginIsolated`, served with `Cross-Origin-Opener-Policy: same-origin` and
     * `Cross-Origin-Embedder-Policy: require-corp`) and is refused without one.
     */
    wasmThreads: z.union([z.number().int().min(1).max(maximumWasmThreads), z.literal('max')]).default(1),
    /**
     * Where the WebAssembly backend fetches its `.wasm` binaries: a URL prefix ending in `/` (the folder that holds
     * all three), or a URL for each binary by file name (all three; a bundler's asset URLs). Default: tfjs's own
     * guess, beside the script that loaded it, which a bundled app rarely satisfies. Passed to tfjs-backend-wasm's
     * `setWasmPaths`.
     */
    wasmPaths: z
      .union([
        z.string().min(1),
        z.strictObject(Object.fromEntries(wasmBinaryNames.map((name) => [name, z.string().min(1)])) as Record<WasmBinaryName, z.ZodString>),
      ])
      .optional(),
    /**
     * Refuse a backend whose synchronous reads (`dataSync`, `arraySync`) return wrong values. Ludic's generation,
     * sampling and trainers read synchronously, so on such a backend they would compute on wrong numbers without a
     * word. WebGPU reads synchronously through an offscreen canvas, which gives zeros in some browsers (headless
     * Chromium on SwiftShader, in a Web Worker): `initTensors` checks one read and throws a `BackendError` then.
     * `false` keeps the backend for code that reads only asynchronously (`await data()`, `await array()`: a forward
     * pass and its loss), and `TensorsRuntime.synchronousReads` says what the check found. Default: true.
     */
    requireSynchronousReads: z.boolean().default(true),
    /** When `auto` skips a backend, print one line saying which it chose and why. Default: true. */
    verbose: z.boolean().default(true),
    /** Where notices go. Default: `console.warn`. */
    log: z.custom<(message: string) => void>((value) => typeof value === 'function').optional(),
  })
  .strict()
export type InitTensorsOptions = z.input<typeof initTensorsOptionsSchema>

/** What `initTensors` chose. */
export interface TensorsRuntime {
  /** The Ludic name of the backend in use. */
  backend: BackendName
  /** The TensorFlow.js name of the backend. */
  tfBackend: string
  /** The device in words: `'GPU (WebGPU)'`, `'CPU (WebAssembly, SIMD)'`… */
  device: string
  /** Threads the backend computes with (1 where it cannot use more). */
  threads: number
  /** Backends `auto` tried and skipped, with the reason. */
  skipped: { backend: BackendName; reason: string }[]
  /**
   * Whether synchronous reads (`dataSync`) work: they gave back what was computed and left the backend working (see
   * `requireSynchronousReads`). `undefined`: not checked (`requireSynchronousReads: false`).
   */
  synchronousReads: boolean | undefined
}

const autoOrder: readonly BackendName[] = ['wasm', 'cpu']

const hints: Record<BackendName, string> = {
  webgpu: 'needs a browser with WebGPU (navigator.gpu) and @tensorflow/tfjs-backend-webgpu@4.22.0',
  webgl: 'needs a browser with WebGL and @tensorflow/tfjs-backend-webgl@4.22.0',
  wasm: 'needs @tensorflow/tfjs-backend-wasm@4.22.0 and its .wasm files served where wasmPaths says',
  cpu: 'needs @tensorflow/tfjs-backend-cpu@4.22.0',
}

interface BrowserGlobals {
  crossOriginIsolated?: boolean
  navigator?: { gpu?: unknown; hardwareConcurrency?: number }
}
const browserGlobals = globalThis as unknown as BrowserGlobals

/** The WebAssembly settings that apply once per page: tfjs-backend-wasm reads them when its module first starts. */
let wasmSettings: { threads: number; paths: string | undefined } | undefined

function wantedWasmThreads(requested: number | 'max'): number {
  const threads = requested === 'max' ? Math.min(Math.max(1, browserGlobals.navigator?.hardwareConcurrency ?? 1), maximumWasmThreads) : requested
  if (threads > 1 && browserGlobals.crossOriginIsolated !== true) {
    throw new InvalidArgumentError({
      argument: 'options.wasmThreads',
      value: requested,
      message:
        'needs a cross-origin isolated page for threads (crossOriginIsolated is not true: serve the page with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp), or use 1',
    })
  }
  return threads
}

async function registerBackend(
  backend: BackendName,
  options: { wasmThreads: number | 'max'; wasmPaths?: InitTensorsOptions['wasmPaths'] },
): Promise<RegisteredBackend> {
  switch (backend) {
    case 'webgpu': {
      if (browserGlobals.navigator?.gpu === undefined)
        throw new BackendError({ backend, message: `this browser has no WebGPU (navigator.gpu is undefined): ${hints.webgpu}` })
      await import('@tensorflow/tfjs-backend-webgpu')
      return { tfBackend: 'webgpu', device: 'GPU (WebGPU)', threads: 1 }
    }
    case 'webgl': {
      await import('@tensorflow/tfjs-backend-webgl')
      return { tfBackend: 'webgl', device: 'GPU (WebGL)', threads: 1 }
    }
    case 'wasm': {
      const threads = wantedWasmThreads(options.wasmThreads)
      const paths = options.wasmPaths === undefined ? undefined : JSON.stringify(options.wasmPaths)
      if (wasmSettings !== undefined && (wasmSettings.threads !== threads || wasmSettings.paths !== paths)) {
        throw new InvalidArgumentError({
          argument: 'options',
          value: { wasmThreads: options.wasmThreads, wasmPaths: options.wasmPaths },
          message: `differs from the WebAssembly settings this page started with (${threads === wasmSettings.threads ? 'wasmPaths' : `wasmThreads ${wasmSettings.threads}`}); tfjs reads them once per page`,
        })
      }
      const wasm = await import('@tensorflow/tfjs-backend-wasm')
      if (wasmSettings === undefined) {
        if (options.wasmPaths !== undefined) wasm.setWasmPaths(options.wasmPaths)
        // tfjs picks the multithreaded build whenever the page could run it; one thread means the single-threaded one.
        if (threads === 1) tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false)
        else wasm.setThreadsCount(threads)
        wasmSettings = { threads, paths }
      }
      return { tfBackend: 'wasm', device: 'CPU (WebAssembly)', threads }
    }
    case 'cpu': {
      await import('@tensorflow/tfjs-backend-cpu')
      return { tfBackend: 'cpu', device: 'CPU (JavaScript)', threads: 1 }
    }
  }
}

/** Registers (if needed) and activates one backend; throws `BackendError` saying what it needs. */
export async function activateBackend(
  backend: BackendName,
  options: { wasmThreads?: number | 'max'; wasmPaths?: InitTensorsOptions['wasmPaths'] } = {},
): Promise<Omit<TensorsRuntime, 'skipped' | 'synchronousReads'>> {
  if (!(backendNames as readonly string[]).includes(backend)) {
    throw new InvalidArgumentError({ argument: 'backend', value: backend, message: `must be one of ${backendNames.join(', ')} in a browser` })
  }
  return startBackend(backend, hints[backend], () =>
    registerBackend(backend, { wasmThreads: options.wasmThreads ?? 1, ...(options.wasmPaths === undefined ? {} : { wasmPaths: options.wasmPaths }) }),
  )
}

let current: TensorsRuntime | undefined

/**
 * Chooses and starts a TensorFlow.js backend in a browser (or a Web Worker). A named backend that is missing or
 * fails throws a `BackendError` saying what it needs; `auto` tries `wasm`, then `cpu`, with a one-line notice per
 * skip. Then checks tfjs-core's engine internals (`checkEngineInternals`), as in Node. The Node entry's backends
 * (`tensorflow`, `tensorflow-gpu`) and `nativeThreads` are not accepted here.
 */
export async function initTensors(options: InitTensorsOptions = {}): Promise<TensorsRuntime> {
  const parsed = parseArgument(initTensorsOptionsSchema, options, 'options')
  const log = parsed.log ?? ((message: string) => console.warn(message))
  if (parsed.backend !== 'auto') {
    const runtime = await activateBackend(parsed.backend, parsed)
    // Unchecked when not required: on a backend where they fail, the check's own read would break the asynchronous ones.
    const synchronousReads = parsed.requireSynchronousReads ? await synchronousReadsWork(parsed.backend) : undefined
    if (synchronousReads === false) {
      throw new BackendError({
        backend: parsed.backend,
        message:
          'reads tensors synchronously wrong in this browser (a dataSync gave wrong values or left the backend unable to read: WebGPU reads synchronously through an offscreen canvas, which fails on some, such as headless Chromium on SwiftShader in a Web Worker); Ludic generates and trains with synchronous reads, so use wasm or webgl here (requireSynchronousReads: false keeps it, unchecked, for code that reads only with await data())',
      })
    }
    current = { ...runtime, skipped: [], synchronousReads }
    checkEngineInternals()
    return current
  }
  const skipped: TensorsRuntime['skipped'] = []
  for (const backend of autoOrder) {
    try {
      current = { ...(await activateBackend(backend, parsed)), skipped, synchronousReads: await synchronousReadsWork(backend) }
    } catch (error) {
      if (InvalidArgumentError.isInstance(error)) throw error
      skipped.push({ backend, reason: BackendError.isInstance(error) ? error.message : errorMessage(error) })
      continue
    }
    checkEngineInternals()
    if (parsed.verbose && skipped.length > 0) {
      const reasons = skipped.map((skip) => `${skip.backend} ${shortReason(skip.reason)}`).join(', ')
      log(`[ludic] TensorFlow.js backend: ${backend} (skipped ${reasons}; see initTensors in @ludic/tensors)`)
    }
    return current
  }
  throw new BackendError({ backend: 'auto', message: `no backend could start: ${skipped.map((skip) => skip.reason).join('; ')}` })
}

/**
 * Synchronous reads on the active backend: a small computed vector and a matrix product through a softmax (a forward
 * pass's shape of work) read with `dataSync`, then a fresh result read with `await data()` (WebGPU in headless
 * Chromium on SwiftShader, in a worker, reads right once and loses its device doing so: later reads fail or never
 * end, so the last read has a deadline). Right values and a working read after: synchronous reads work.
 */
async function synchronousReadsWork(backend: BackendName): Promise<boolean> {
  // wasm and cpu keep tensors in the page's memory: a synchronous read is a copy, nothing to check at start-up.
  if (backend === 'wasm' || backend === 'cpu') return true
  const computed = tf.tidy(() => {
    const vector = tf.add(tf.tensor1d([1.5, -2, 3]), tf.scalar(0.25))
    const left = tf.reshape(tf.range(0, 32 * 64, 1, 'float32'), [32, 64])
    const right = tf.reshape(tf.range(0, 64 * 48, 1, 'float32'), [64, 48])
    return [vector, tf.softmax(tf.div(tf.matMul(left, right), tf.scalar(1e6)))]
  })
  const after = tf.tidy(() => tf.mul(tf.tensor1d([2, 4]), tf.scalar(0.5)))
  try {
    const [vector, product] = computed.map((tensor) => Array.from(tensor.dataSync() as Float32Array))
    const total = product!.reduce((sum, value) => sum + value, 0)
    if (vector![0] !== 1.75 || vector![1] !== -1.75 || vector![2] !== 3.25 || Math.abs(total - 32) > 1e-3) return false
    let timer: ReturnType<typeof setTimeout> | undefined
    const deadline = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), 10_000)
    })
    const values = await Promise.race([after.data(), deadline]).finally(() => clearTimeout(timer))
    return values !== undefined && values[0] === 1 && values[1] === 2
  } catch {
    return false
  } finally {
    tf.dispose([...computed, after])
  }
}

/** The runtime chosen by the last `initTensors`, if any. */
export function currentRuntime(): TensorsRuntime | undefined {
  return current
}
