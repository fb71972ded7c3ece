import * as tf from '@tensorflow/tfjs-core'
import { wasmBatchMatMulConfig } from './batch-mat-mul.js'
import { wasmFusedMatMulConfig } from './fused-mat-mul.js'
import { wasmOneHotConfig } from './one-hot.js'
import { wasmUnsortedSegmentSumConfig } from './unsorted-segment-sum.js'

/**
 * Kernel fixes per backend: kernels that replace slow or broken stock kernels, or add missing ones.
 * `applyKernelFixes(tfBackendName)` is called by `initTensors` after a backend starts; it is
 * idempotent. `removeKernelFixes(tfBackendName)` restores the stock kernels (the benchmark measures
 * "before" and "after" in one process with it).
 */
interface KernelFix {
  kernelName: string
  /** Builds the replacement; `stock` is the kernel it replaces, if the backend had one. */
  create(stock: tf.KernelConfig | undefined): tf.KernelConfig
}

const fixesByBackend: Readonly<Record<string, readonly KernelFix[]>> = {
  wasm: [
    // Slow: transposed and batched products ran a naive loop (many times slower than the XNNPACK path; figures in the package README's kernel fixes).
    { kernelName: tf.BatchMatMul, create: wasmBatchMatMulConfig },
    // Broken: added the last bias element to every row after the first on transposed or batched
    // products; slow there too. Composed from the fixed BatchMatMul, Add and the activation kernels.
    { kernelName: tf._FusedMatMul, create: () => wasmFusedMatMulConfig },
    // Missing: the gradient of tf.gather (embedding lookup) needs it.
    { kernelName: tf.UnsortedSegmentSum, create: () => wasmUnsortedSegmentSumConfig },
    // Broken: wrote integer bit patterns into float32 outputs (tf.oneHot(…, 'float32') gave 1.4e-45).
    { kernelName: tf.OneHot, create: () => wasmOneHotConfig },
  ],
}

/** For each backend with fixes installed, the stock kernel each fix replaced (undefined: none). */
const installed = new Map<string, { kernelName: string; stock: tf.KernelConfig | undefined }[]>()

/** Installs the fixes for `tfBackendName` (a TensorFlow.js backend name such as `'wasm'`). Idempotent. */
export function applyKernelFixes(tfBackendName: string): void {
  const fixes = fixesByBackend[tfBackendName]
  if (fixes === undefined || installed.has(tfBackendName)) return
  const replaced: { kernelName: string; stock: tf.KernelConfig | undefined }[] = []
  for (const fix of fixes) {
    const stock = tf.getKernel(fix.kernelName, tfBackendName)
    if (stock !== undefined) tf.unregisterKernel(fix.kernelName, tfBackendName)
    tf.registerKernel(fix.create(stock))
    replaced.push({ kernelName: fix.kernelName, stock })
  }
  installed.set(tfBackendName, replaced)
}

/** Restores the stock kernels of `tfBackendName` (and removes the added ones). Idempotent. */
export function removeKernelFixes(tfBackendName: string): void {
  const replaced = installed.get(tfBackendName)
  if (replaced === undefined) return
  const backendInstance = tf.engine().registry[tfBackendName]
  for (const { kernelName, stock } of replaced) {
    if (tf.getKernel(kernelName, tfBackendName) !== undefined) tf.unregisterKernel(kernelName, tfBackendName)
    if (stock === undefined) continue
    tf.registerKernel(stock)
    // The engine runs setup functions when a backend starts; re-run it for a backend already started.
    if (backendInstance !== undefined) stock.setupFunc?.(backendInstance)
  }
  installed.delete(tfBackendName)
}

/** The names of the kernels fixed on `tfBackendName` right now (empty when none are installed). */
export function appliedKernelFixes(tfBackendName: string): string[] {
  return (installed.get(tfBackendName) ?? []).map(({ kernelName }) => kernelName)
}
