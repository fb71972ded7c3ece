import * as tf from '@tensorflow/tfjs-core'
import type { BackendWasm } from '@tensorflow/tfjs-backend-wasm'
import { BackendError, InvalidArgumentError } from '@ludic/core'

/**
 * `_FusedMatMul` (`tf.fused.matMul`: product, + bias, activation) for the WebAssembly backend.
 *
 * The stock kernel shares the slow loop of `BatchMatMul` for transposed or batched products and, on
 * that path, adds `bias[min(row · columns + column, size − 1)]`: every row after the first gets the
 * last bias element (wrong results, e.g. `tf.fused.matMul({a, b, transposeB: true, bias})`). It also
 * rejects a bias of rank other than 1. This kernel composes the backend's own kernels: the (fixed)
 * `BatchMatMul`, then `Add` for the bias (any broadcastable shape), then the activation's kernel.
 */
const activationKernels: Record<string, string> = {
  relu: tf.Relu,
  relu6: tf.Relu6,
  elu: tf.Elu,
  sigmoid: tf.Sigmoid,
  leakyrelu: tf.LeakyRelu,
  prelu: tf.Prelu,
}

function runWasmKernel(kernelName: string, backend: BackendWasm, inputs: tf.NamedTensorInfoMap, attrs: tf.NamedAttrMap = {}): tf.TensorInfo {
  const kernel = tf.getKernel(kernelName, 'wasm')
  if (kernel === undefined) throw new BackendError({ backend: 'wasm', message: `kernel ${kernelName} is not registered` })
  return kernel.kernelFunc({ inputs, backend: backend as unknown as tf.KernelBackend, attrs }) as tf.TensorInfo
}

function fusedMatMul(args: { inputs: tf.NamedTensorInfoMap; backend: unknown; attrs?: tf.NamedAttrMap }): tf.TensorInfo {
  const backend = args.backend as BackendWasm
  const { a, b, bias, preluActivationWeights } = args.inputs as Record<string, tf.TensorInfo | undefined>
  const { transposeA, transposeB, activation, leakyreluAlpha } = (args.attrs ?? {}) as {
    transposeA?: boolean
    transposeB?: boolean
    activation?: string
    leakyreluAlpha?: number
  }
  const activationName = activation ?? 'linear'
  if (activationName !== 'linear' && activationKernels[activationName] === undefined) {
    throw new InvalidArgumentError({
      argument: 'activation',
      value: activation,
      message: `must be linear or one of ${Object.keys(activationKernels).join(', ')}`,
    })
  }
  if (activationName === 'prelu' && preluActivationWeights === undefined) {
    throw new InvalidArgumentError({ argument: 'preluActivationWeights', value: undefined, message: 'prelu needs its weights' })
  }
  let result = runWasmKernel(tf.BatchMatMul, backend, { a: a!, b: b! }, { transposeA: transposeA === true, transposeB: transposeB === true })
  const replace = (next: tf.TensorInfo): void => {
    backend.disposeData(result.dataId)
    result = next
  }
  if (bias !== undefined) replace(runWasmKernel(tf.Add, backend, { a: result, b: bias }))
  if (activationName === 'prelu') replace(runWasmKernel(tf.Prelu, backend, { x: result, alpha: preluActivationWeights! }))
  else if (activationName === 'leakyrelu') replace(runWasmKernel(tf.LeakyRelu, backend, { x: result }, { alpha: leakyreluAlpha ?? 0.2 }))
  else if (activationName !== 'linear') replace(runWasmKernel(activationKernels[activationName]!, backend, { x: result }))
  return result
}

export const wasmFusedMatMulConfig: tf.KernelConfig = {
  kernelName: tf._FusedMatMul,
  backendName: 'wasm',
  kernelFunc: fusedMatMul as unknown as tf.KernelFunc,
}
