// The Node entry: the browser entry (browser.ts: kernels, numerics, safetensors in memory, memory helpers), Node's
// initTensors in place of the browser's (the native TensorFlow backends, LUDIC_BACKEND, thread settings), and the
// safetensors file functions.
export * from './browser.js'
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
export { openSafetensors, type SafetensorsFile } from './safetensors/open-safetensors.js'
export { readSafetensorsFile } from './safetensors/read-safetensors-file.js'
export { writeSafetensorsFile, type WriteSafetensorsFileOptions } from './safetensors/write-safetensors-file.js'
export {
  readShardedSafetensors,
  readShardedSafetensorsOptionsSchema,
  type ReadShardedSafetensorsOptions,
  type ShardedSafetensors,
} from './safetensors/read-sharded-safetensors.js'
export {
  writeShardedSafetensors,
  writeShardedSafetensorsOptionsSchema,
  type WriteShardedSafetensorsOptions,
  type WriteShardedSafetensorsResult,
} from './safetensors/write-sharded-safetensors.js'
export { syncDirectory, writeFileAtomically, writeFully, writeJsonFileAtomically } from './safetensors/write-file-atomically.js'
