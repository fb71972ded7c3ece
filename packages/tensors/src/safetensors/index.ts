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
} from './safetensors-dtype.js'
export type {
  SafetensorsContents,
  SafetensorsReader,
  SafetensorsTensor,
  SafetensorsTensorData,
  SafetensorsTensorInfo,
  SafetensorsTensorInput,
  SafetensorsTensorsInput,
} from './safetensors-tensor.js'
export { bfloat16BitsToFloat32, float16BitsToFloat32, float32ToBfloat16Bits, float32ToFloat16Bits } from './half-precision.js'
export { bigInt64ArrayToInt32Array } from './big-int64-to-int32.js'
export { maxHeaderByteLength } from './safetensors-header.js'
export { parseSafetensors, parseSafetensorsOptionsSchema, type ParseSafetensorsOptions } from './parse-safetensors.js'
export {
  serializeSafetensors,
  serializeSafetensorsOptionsSchema,
  type SerializeSafetensorsOptions,
} from './serialize-safetensors.js'
export { openSafetensors, type SafetensorsFile } from './open-safetensors.js'
export { readSafetensorsFile } from './read-safetensors-file.js'
export { writeSafetensorsFile, type WriteSafetensorsFileOptions } from './write-safetensors-file.js'
export {
  readShardedSafetensors,
  readShardedSafetensorsOptionsSchema,
  type ReadShardedSafetensorsOptions,
  type ShardedSafetensors,
} from './read-sharded-safetensors.js'
export {
  writeShardedSafetensors,
  writeShardedSafetensorsOptionsSchema,
  type WriteShardedSafetensorsOptions,
  type WriteShardedSafetensorsResult,
} from './write-sharded-safetensors.js'
export { syncDirectory, writeFileAtomically, writeFully, writeJsonFileAtomically } from './write-file-atomically.js'
