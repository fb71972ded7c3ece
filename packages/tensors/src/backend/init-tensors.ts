import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import { availableParallelism } from 'node:os'
import * as tf from '@tensorflow/tfjs-core'
import './register-gradients.js'
import { z } from 'zod'
import { BackendError, InvalidArgumentError, parseArgument } from '@ludic/core'
import { checkEngineInternals } from '../engine/engine-internals.js'
import { errorMessage, shortReason, startBackend } from './start-backend.js'

/** The backends Ludic can run on, fastest first. */
export const backendNames = ['tensorflow-gpu', 'tensorflow', 'webgpu', 'wasm', 'cpu'] as const
export type BackendName = (typeof backendNames)[number]
export type BackendRequest = BackendName | 'auto'

export const initTensorsOptionsSchema = z
  .object({
    /**
     * Which backend to use. `auto` (the default) tries `tensorflow-gpu`, then `tensorflow`, then `wasm`,
     * then `cpu`. The environment variable `LUDIC_BACKEND` overrides this option.
     */
    backend: z.enum(['auto', ...backendNames]).default('auto'),
    /**
     * Threads for the WebAssembly backend: 1 (the default), 2–8, or `'max'` (the available cores, at most
     * 8). More than one starts tfjs's multithreaded build, which pays for large matrices and costs for
     * small models (see the package README). `LUDIC_WASM_THREADS` overrides it.
     */
    wasmThreads: z.union([z.number().int().min(1).max(8), z.literal('max')]).default(1),
    /**
     * Threads of the native TensorFlow backend's intra-op pool (the threads one kernel, e.g. a matmul, splits
     * its work over) and inter-op pool (kernels run concurrently). Default: TensorFlow's own, the available
     * cores for each. Measured on the 2-core benchmark machine (`npm run bench -- train-step`, tiny preset; the
     * package README has the figure): one intra-op thread made the training step several times slower (its oneDNN
     * matmuls lose the second core) and one inter-op thread changed nothing, so the default stays TensorFlow's; lower them when several
     * processes share the cores. TensorFlow reads them once, when the native backend first starts in the
     * process (they are passed as `TF_NUM_INTRAOP_THREADS` / `TF_NUM_INTEROP_THREADS`, which win when set
     * in the environment).
     */
    nativeThreads: z
      .strictObject({
        intraOp: z.number().int().min(1).max(256).optional(),
        interOp: z.number().int().min(1).max(256).optional(),
      })
      .default({}),
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
  /** The TensorFlow.js name of the backend (`tensorflow` for both native variants). */
  tfBackend: string
  /** The device in words: `'CUDA GPU'`, `'CPU (TensorFlow native)'`, `'CPU (WebAssembly, SIMD)'`… */
  device: string
  /** Threads the backend computes with (1 where it cannot use more). */
  threads: number
  /** Backends `auto` tried and skipped, with the reason. */
  skipped: { backend: BackendName; reason: string }[]
}

const autoOrder: readonly BackendName[] = ['tensorflow-gpu', 'tensorflow', 'wasm', 'cpu']

const installHints: Record<BackendName, string> = {
  'tensorflow-gpu': 'install @tensorflow/tfjs-node-gpu@4.22.0 (needs CUDA and cuDNN and downloads libtensorflow at install time)',
  tensorflow:
    'install @tensorflow/tfjs-node@4.22.0 (its install downloads libtensorflow; offline, build its addon against the TensorFlow C library of the tensorflow-cpu Python wheel)',
  webgpu: 'install @tensorflow/tfjs-backend-webgpu@4.22.0 and webgpu (Dawn for Node) and run on a machine with a GPU',
  wasm: 'install @tensorflow/tfjs-backend-wasm@4.22.0',
  cpu: 'install @tensorflow/tfjs-backend-cpu@4.22.0',
}

const require = createRequire(import.meta.url)

/** Loads the module for a backend and registers it with tfjs-core. Returns its tfjs name and device. */
async function registerBackend(
  backend: BackendName,
  wasmThreadsWanted: number | 'max',
  nativeThreads: NativeThreads,
): Promise<{ tfBackend: string; device: string; threads: number }> {
  switch (backend) {
    case 'tensorflow-gpu':
    case 'tensorflow': {
      const moduleName = backend === 'tensorflow-gpu' ? '@tensorflow/tfjs-node-gpu' : '@tensorflow/tfjs-node'
      // TensorFlow's C++ logging prints start-up banners on stderr; keep warnings and errors only.
      process.env.TF_CPP_MIN_LOG_LEVEL ??= '2'
      // TensorFlow sizes its thread pools from these when it creates its context, on the first start.
      if (nativeIntraOpThreads === undefined) {
        if (nativeThreads.intraOp !== undefined) process.env.TF_NUM_INTRAOP_THREADS ??= String(nativeThreads.intraOp)
        if (nativeThreads.interOp !== undefined) process.env.TF_NUM_INTEROP_THREADS ??= String(nativeThreads.interOp)
      }
      // The native packages are CommonJS and register the 'tensorflow' backend on load, on the
      // tfjs-core instance they resolve. That must be ours: check it, or two registries diverge.
      const native = require(moduleName) as { version?: { 'tfjs-core'?: string } }
      const nativeCorePath = require.resolve('@tensorflow/tfjs-core', { paths: [dirname(require.resolve(moduleName))] })
      const ourCorePath = require.resolve('@tensorflow/tfjs-core')
      if (dirname(nativeCorePath) !== dirname(ourCorePath) && !sameCoreVersion(native)) {
        throw new Error(`${moduleName} uses a second copy of @tensorflow/tfjs-core (${nativeCorePath}); install both at the same version`)
      }
      if (tf.findBackendFactory('tensorflow') === null) throw new Error(`${moduleName} loaded but registered no backend`)
      nativeIntraOpThreads ??= positiveInteger(process.env.TF_NUM_INTRAOP_THREADS) ?? availableParallelism()
      return {
        tfBackend: 'tensorflow',
        device: backend === 'tensorflow-gpu' ? 'CUDA GPU (TensorFlow native)' : 'CPU (TensorFlow native)',
        threads: nativeIntraOpThreads,
      }
    }
    case 'webgpu': {
      const dawn = (await import(/* @vite-ignore */ 'webgpu' as string)) as {
        create: (options: string[]) => unknown
        globals: Record<string, unknown>
      }
      Object.assign(globalThis, dawn.globals)
      const navigatorObject = ((globalThis as { navigator?: object }).navigator ?? {}) as Record<string, unknown>
      if ((globalThis as { navigator?: object }).navigator === undefined) {
        Object.defineProperty(globalThis, 'navigator', { value: navigatorObject, configurable: true })
      }
      if (navigatorObject.gpu === undefined) {
        Object.defineProperty(navigatorObject, 'gpu', { value: dawn.create([]), configurable: true })
      }
      await import(/* @vite-ignore */ '@tensorflow/tfjs-backend-webgpu' as string)
      return { tfBackend: 'webgpu', device: 'GPU (WebGPU through Dawn)', threads: 1 }
    }
    case 'wasm': {
      const wasm = await import('@tensorflow/tfjs-backend-wasm')
      // Under Node the backend cannot find its .wasm files by URL: point it at its own dist folder.
      const distDirectory = dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'))
      wasm.setWasmPaths(`${distDirectory}/`)
      // More than one thread starts the multithreaded build (XNNPACK's thread pool), which
      // tfjs-backend-wasm disables under Node; the default stays single-threaded. See the README.
      const { registerThreadedWasmBackend, wantedWasmThreads } = await import('../kernels/wasm-threads.js')
      const threads = wantedWasmThreads(wasmThreadsWanted)
      if (threads > 1) await registerThreadedWasmBackend(threads)
      return { tfBackend: 'wasm', device: 'CPU (WebAssembly)', threads: 1 }
    }
    case 'cpu': {
      await import('@tensorflow/tfjs-backend-cpu')
      return { tfBackend: 'cpu', device: 'CPU (JavaScript)', threads: 1 }
    }
  }
}

/** Thread counts for the native backend's pools (see `nativeThreads` in `initTensorsOptionsSchema`). */
export interface NativeThreads {
  intraOp?: number | undefined
  interOp?: number | undefined
}

/** The intra-op threads the native backend started with in this process (set on its first activation). */
let nativeIntraOpThreads: number | undefined

function positiveInteger(value: string | undefined): number | undefined {
  const parsed = Number(value)
  return value !== undefined && Number.isSafeInteger(parsed) && parsed > 0 ? parsed : undefined
}

function sameCoreVersion(native: { version?: { 'tfjs-core'?: string } }): boolean {
  return native.version?.['tfjs-core'] === tf.version_core
}

/** Registers (if needed) and activates one backend; throws `BackendError` saying what to install. */
export async function activateBackend(
  backend: BackendName,
  options: { wasmThreads?: number | 'max'; nativeThreads?: NativeThreads } = {},
): Promise<Omit<TensorsRuntime, 'skipped'>> {
  return startBackend(backend, installHints[backend], () => registerBackend(backend, options.wasmThreads ?? 1, options.nativeThreads ?? {}), {
    wrapStart: backend === 'wasm' ? withoutProcessListenersAdded : undefined,
    afterStart: backend === 'tensorflow-gpu' ? requireNativeGpu : undefined,
  })
}

async function requireNativeGpu(): Promise<void> {
  if (!(await nativeSeesGpu())) {
    throw new BackendError({ backend: 'tensorflow-gpu', message: 'TensorFlow native started without a CUDA GPU (no GPU device visible)' })
  }
}

/**
 * Runs `start`, then removes the process 'uncaughtException' and 'unhandledRejection' listeners added meanwhile.
 * tfjs-backend-wasm's Emscripten glue adds one of each under Node when its module starts, and both rethrow what they
 * get: a user's own error, thrown anywhere later, then printed the glue's line of minified source (tens of kilobytes)
 * instead of the error's stack, and Node exited 7 ("internal exception handler failure") instead of 1. The glue's
 * own clean-up removes them only when the backend is disposed (and its filter of the listeners it added keeps all).
 */
async function withoutProcessListenersAdded<T>(start: () => Promise<T>): Promise<T> {
  const uncaught = new Set(process.listeners('uncaughtException'))
  const unhandled = new Set(process.listeners('unhandledRejection'))
  try {
    return await start()
  } finally {
    for (const listener of process.listeners('uncaughtException')) if (!uncaught.has(listener)) process.removeListener('uncaughtException', listener)
    for (const listener of process.listeners('unhandledRejection')) if (!unhandled.has(listener)) process.removeListener('unhandledRejection', listener)
  }
}

async function nativeSeesGpu(): Promise<boolean> {
  try {
    const backend = tf.backend() as unknown as { binding?: { isUsingGpuDevice?: () => boolean } }
    return backend.binding?.isUsingGpuDevice?.() ?? true
  } catch {
    return true
  }
}

/** Reads `LUDIC_BACKEND`; an unknown value is an `InvalidArgumentError`. */
export function backendFromEnvironment(): BackendRequest | undefined {
  const value = process.env.LUDIC_BACKEND
  if (value === undefined || value === '') return undefined
  if (value === 'auto' || (backendNames as readonly string[]).includes(value)) return value as BackendRequest
  throw new InvalidArgumentError({
    argument: 'LUDIC_BACKEND',
    value,
    message: `must be one of auto, ${backendNames.join(', ')}`,
  })
}

let current: TensorsRuntime | undefined

/**
 * Chooses and starts a TensorFlow.js backend. `LUDIC_BACKEND` overrides `options.backend`.
 * A named backend that is missing or fails throws a `BackendError` saying what to install; `auto`
 * falls through the order tensorflow-gpu → tensorflow → wasm → cpu with a one-line notice per skip.
 * Then checks tfjs-core's engine internals (`checkEngineInternals`): another tfjs-core than the one they were
 * written for throws `EngineInternalsError`.
 */
export async function initTensors(options: InitTensorsOptions = {}): Promise<TensorsRuntime> {
  const parsed = parseArgument(initTensorsOptionsSchema, options, 'options')
  const requested = backendFromEnvironment() ?? parsed.backend
  const log = parsed.log ?? ((message: string) => console.warn(message))
  if (requested !== 'auto') {
    current = { ...(await activateBackend(requested, parsed)), skipped: [] }
    checkEngineInternals()
    return current
  }
  const skipped: TensorsRuntime['skipped'] = []
  for (const backend of autoOrder) {
    try {
      current = { ...(await activateBackend(backend, parsed)), skipped }
    } catch (error) {
      skipped.push({ backend, reason: BackendError.isInstance(error) ? error.message : errorMessage(error) })
      continue
    }
    // Outside the try: a tfjs-core whose internals differ is an error of the installation, not a backend to skip.
    checkEngineInternals()
    if (parsed.verbose && skipped.length > 0) {
      const reasons = skipped.map((skip) => `${skip.backend} ${shortReason(skip.reason)}`).join(', ')
      log(`[ludic] TensorFlow.js backend: ${backend} (skipped ${reasons}; see initTensors in @ludic/tensors)`)
    }
    return current
  }
  throw new BackendError({ backend: 'auto', message: `no backend could start: ${skipped.map((skip) => skip.reason).join('; ')}` })
}

/** The runtime chosen by the last `initTensors`, if any. */
export function currentRuntime(): TensorsRuntime | undefined {
  return current
}
