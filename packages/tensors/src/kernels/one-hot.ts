import * as tf from '@tensorflow/tfjs-core'
import type { BackendWasm } from '@tensorflow/tfjs-backend-wasm'

/**
 * `OneHot` for the WebAssembly backend. The stock kernel writes the integer bit patterns of
 * `onValue`/`offValue` whatever the dtype, so `tf.oneHot(ids, depth, 1, 0, 'float32')` yields
 * 1.4e-45 (the float with bits 0x00000001) instead of 1. This kernel writes typed values.
 */
function oneHot(args: { inputs: tf.NamedTensorInfoMap; backend: unknown; attrs?: tf.NamedAttrMap }): tf.TensorInfo {
  const backend = args.backend as BackendWasm
  const indices = args.inputs.indices as tf.TensorInfo
  const { dtype, depth, onValue, offValue } = args.attrs as unknown as tf.OneHotAttrs
  const output = backend.makeOutput([...indices.shape, depth], dtype)
  if (tf.util.sizeFromShape(output.shape) === 0) return output
  const indexValues = backend.typedArrayFromHeap(indices)
  const values = backend.typedArrayFromHeap(output)
  values.fill(offValue)
  for (let row = 0; row < indexValues.length; row++) {
    const index = indexValues[row]!
    if (index >= 0 && index < depth) values[row * depth + index] = onValue
  }
  return output
}

export const wasmOneHotConfig: tf.KernelConfig = {
  kernelName: tf.OneHot,
  backendName: 'wasm',
  kernelFunc: oneHot as unknown as tf.KernelFunc,
}
