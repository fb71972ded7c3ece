// The browser entry (the `browser` export condition): everything but what needs Node — the native backends and
// `LUDIC_BACKEND`/`LUDIC_WASM_THREADS` (initTensors here starts webgpu, webgl, wasm or cpu), and the safetensors
// file functions (parse and serialize bytes instead: parseSafetensors, serializeSafetensors).
export {
  activateBackend,
  backendNames,
  currentRuntime,
  initTensors,
  initTensorsOptionsSchema,
  wasmBinaryNames,
  type BackendName,
  type BackendRequest,
  type InitTensorsOptions,
  type TensorsRuntime,
  type WasmBinaryName,
} from './backend/init-tensors-browser.js'
export {
  addAtIds,
  entropyFromLogits,
  logSoftmax,
  logsumexp,
  maskedMean,
  maskedSum,
  maskedVariance,
  maskedWhiten,
  stopGradient,
  tokenLogprobs,
} from './numerics/index.js'
// Kernel fixes: `initTensors` applies them; a benchmark removes and re-applies them to measure the stock kernels beside the fixed ones
export { applyKernelFixes, removeKernelFixes } from './kernels/index.js'
// The WebAssembly binary writer of Ludic's hand-written SIMD kernels (these and @ludic/model's host-decoder matmul kernel)
export * as wasmBytecode from './kernels/wasm-bytecode.js'
// TensorFlow's own ops on the native backend (resource variables and the fused Adam that createAdamW uses)
export { NativeVariable, hasNativeOps } from './kernels/native-ops.js'
// tfjs-core's private engine internals, all here: the gradient tape that frees as it goes, untaped computations, and the version check
export {
  EngineInternalsError,
  checkEngineInternals,
  constantOf,
  gradientPaths,
  gradientsOf,
  offTape,
  supportedTfjsCoreVersion,
  tapeGradients,
} from './engine/engine-internals.js'
// Memory (the test helper expectNoLeaks is at '@ludic/tensors/test')
export { createTensorScope, withTensorScope, type TensorScope } from './memory/tensor-scope.js'

// Safetensors
export {
  dtypeBits,
  dtypeBytes,
  isSafetensorsDtype,
  isSupportedDtype,
  safetensorsDtypes,
  supportedDtypes,
  type FloatDtype,
  type SafetensorsDtype,
  type SupportedDtype,
} from './safetensors/safetensors-dtype.js'
export type {
  SafetensorsContents,
  SafetensorsReader,
  SafetensorsTensor,
  SafetensorsTensorData,
  SafetensorsTensorInfo,
  SafetensorsTensorInput,
  SafetensorsTensorsInput,
} from './safetensors/safetensors-tensor.js'
export { bfloat16BitsToFloat32, float16BitsToFloat32, float32ToBfloat16Bits, float32ToFloat16Bits } from './safetensors/half-precision.js'
export { bigInt64ArrayToInt32Array } from './safetensors/big-int64-to-int32.js'
export { maxHeaderByteLength } from './safetensors/safetensors-header.js'
export { parseSafetensors, parseSafetensorsOptionsSchema, safetensorsBytesReader, type ParseSafetensorsOptions } from './safetensors/parse-safetensors.js'
export {
  serializeSafetensors,
  serializeSafetensorsOptionsSchema,
  type SerializeSafetensorsOptions,
} from './safetensors/serialize-safetensors.js'
