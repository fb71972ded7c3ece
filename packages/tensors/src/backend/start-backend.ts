import * as tf from '@tensorflow/tfjs-core'
import { BackendError, InvalidArgumentError } from '@ludic/core'
import { quietCpuBackendBanner } from '../engine/engine-internals.js'
import { applyKernelFixes } from '../kernels/index.js'

/** A backend's module loaded and registered with tfjs-core: its tfjs name, the device in words and its threads. */
export interface RegisteredBackend {
  tfBackend: string
  device: string
  threads: number
}

/** What `activateBackend` returns, in Node and in a browser alike. */
export interface StartedBackend<Name extends string> extends RegisteredBackend {
  backend: Name
}

/**
 * The steps every entry's `activateBackend` shares once it knows how to load a backend's module: `register` loads
 * and registers it (a missing module is a `BackendError` saying what to install, `hint`), then tfjs-core starts it,
 * the CPU backend's banner is quieted and Ludic's kernel fixes are installed. `wrapStart` wraps the start (Node's
 * WebAssembly backend removes the process listeners its glue adds); `afterStart` checks the started backend.
 */
export async function startBackend<Name extends string>(
  backend: Name,
  hint: string,
  register: () => Promise<RegisteredBackend>,
  hooks: { wrapStart?: (<T>(start: () => Promise<T>) => Promise<T>) | undefined; afterStart?: (() => Promise<void>) | undefined } = {},
): Promise<StartedBackend<Name>> {
  let registered: RegisteredBackend
  try {
    registered = await register()
  } catch (error) {
    if (InvalidArgumentError.isInstance(error) || BackendError.isInstance(error)) throw error
    const missing = isModuleNotFound(error)
    throw new BackendError({ backend, message: `${missing ? 'is not installed' : `failed to load (${errorMessage(error)})`}: ${hint}`, cause: error })
  }
  let ok: boolean
  try {
    const start = async () => {
      const started = await tf.setBackend(registered.tfBackend)
      await tf.ready()
      return started
    }
    ok = await (hooks.wrapStart === undefined ? start() : hooks.wrapStart(start))
  } catch (error) {
    throw new BackendError({ backend, message: `failed to start (${errorMessage(error)}): ${hint}`, cause: error })
  }
  if (!ok || tf.getBackend() !== registered.tfBackend) throw new BackendError({ backend, message: `failed to start: ${hint}` })
  await hooks.afterStart?.()
  if (registered.tfBackend === 'cpu') quietCpuBackendBanner()
  applyKernelFixes(registered.tfBackend)
  const threads = registered.tfBackend === 'wasm' ? wasmThreads() : registered.threads
  const device = registered.tfBackend === 'wasm' ? `CPU (WebAssembly${wasmSimd() ? ', SIMD' : ''})` : registered.device
  return { backend, tfBackend: registered.tfBackend, device, threads }
}

function wasmThreads(): number {
  try {
    const backend = tf.backend() as unknown as { wasm?: { tfjs?: { getThreadsCount?: () => number } } }
    const threads = backend.wasm?.tfjs?.getThreadsCount?.()
    return typeof threads === 'number' && threads >= 1 ? threads : 1
  } catch {
    return 1
  }
}

function wasmSimd(): boolean {
  try {
    return Boolean(tf.env().getAsync === undefined ? false : tf.env().get('WASM_HAS_SIMD_SUPPORT'))
  } catch {
    return false
  }
}

function isModuleNotFound(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code
  return code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND'
}

/** The first line of an error's message. */
export function errorMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  return message.split('\n')[0] ?? message
}

/** A skipped backend's reason in two or three words, for `auto`'s one-line notice. */
export function shortReason(reason: string): string {
  if (reason.includes('is not installed')) return 'not installed'
  if (reason.includes('failed to load')) return 'failed to load'
  return 'failed to start'
}
