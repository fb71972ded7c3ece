import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { applyKernelFixes } from '../src/kernels/index.js'
import { registerThreadedWasmBackend } from '../src/kernels/wasm-threads.js'

/**
 * Starts backends for the benchmarks the way `initTensors` does (same modules, same wasm paths, the
 * same multithreaded-wasm registration and kernel fixes), without importing `init-tensors.ts`: that
 * module registers gradients through tfjs-core's ESM build, which plain Node cannot load (it imports
 * files without extensions), and a benchmark needs no gradients.
 */
const require = createRequire(import.meta.url)

export type BenchBackend = 'cpu' | 'wasm' | 'tensorflow'

/** Starts `backend` (`wasmThreads` > 1: the multithreaded build); returns the threads it computes with. */
export async function startBackend(backend: BenchBackend, wasmThreads = 1): Promise<{ threads: number; device: string }> {
  switch (backend) {
    case 'cpu':
      await import('@tensorflow/tfjs-backend-cpu')
      await setBackend('cpu')
      return { threads: 1, device: 'CPU (JavaScript)' }
    case 'wasm': {
      const wasm = await import('@tensorflow/tfjs-backend-wasm')
      wasm.setWasmPaths(`${dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'))}/`)
      if (wasmThreads > 1) await registerThreadedWasmBackend(wasmThreads)
      await setBackend('wasm')
      const module = (tf.backend() as unknown as { wasm: { tfjs: { getThreadsCount(): number } } }).wasm
      return { threads: module.tfjs.getThreadsCount(), device: 'CPU (WebAssembly, SIMD)' }
    }
    case 'tensorflow':
      require('@tensorflow/tfjs-node')
      await setBackend('tensorflow')
      return { threads: 0, device: 'CPU (TensorFlow native)' }
  }
}

async function setBackend(name: string): Promise<void> {
  if (!(await tf.setBackend(name))) throw new Error(`backend ${name} did not start`)
  await tf.ready()
  applyKernelFixes(name)
}
