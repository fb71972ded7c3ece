import type * as tf from '@tensorflow/tfjs-core'
import type { BackendWasm } from '@tensorflow/tfjs-backend-wasm'
import { BackendError } from '@ludic/core'
import { isWasmMemory, type WasmMemory } from './webassembly-api.js'

/**
 * The parts of the WebAssembly backend's Emscripten module that the kernels of this folder use. They
 * are public members of the module object in tfjs-backend-wasm 4.22 but not in its type declarations.
 */
export interface WasmModuleInternals {
  HEAPU8: Uint8Array
  _malloc(bytes: number): number
  _free(address: number): void
  /** The instance's exports; `memory` is exported by the single-threaded builds. */
  asm?: { memory?: unknown }
  /** Set by the multithreaded build, whose memory is created in JavaScript and imported. */
  wasmMemory?: unknown
}

export function wasmModuleOf(backend: BackendWasm): WasmModuleInternals {
  return backend.wasm as unknown as WasmModuleInternals
}

/** The `WebAssembly.Memory` the backend keeps its tensors in. */
export function wasmMemoryOf(backend: BackendWasm): WasmMemory {
  const module = wasmModuleOf(backend)
  const memory = module.asm?.memory ?? module.wasmMemory
  if (!isWasmMemory(memory)) {
    throw new BackendError({ backend: 'wasm', message: 'cannot find the WebAssembly memory of the wasm backend (tfjs-backend-wasm 4.22 expected)' })
  }
  return memory
}

/** Byte address of a tensor's data in the backend's memory. */
export function memoryOffsetOf(backend: BackendWasm, tensor: tf.TensorInfo): number {
  return backend.dataIdMap.get(tensor.dataId)!.memoryOffset >>> 0
}
