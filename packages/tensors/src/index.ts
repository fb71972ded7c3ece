export {
  activateBackend,
  backendFromEnvironment,
  backendNames,
  currentRuntime,
  initTensors,
  initTensorsOptionsSchema,
  type BackendName,
  type BackendRequest,
  type InitTensorsOptions,
  type TensorsRuntime,
} from './backend/init-tensors.js'
export {
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
export { createTensorScope, expectNoLeaks, TensorLeakError, withTensorScope, type NoLeaksOptions, type TensorScope } from './memory/index.js'
export * from './safetensors/index.js'
