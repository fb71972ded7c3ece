import { InvalidArgumentError, ParseError, parseArgument } from '@ludic/core'
import { z } from 'zod'
import { isSupportedDtype, supportedDtypes } from './safetensors-dtype.js'
import { parseSafetensorsHeader, readHeaderByteLength } from './safetensors-header.js'
import type { SafetensorsContents, SafetensorsReader, SafetensorsTensor, SafetensorsTensorInfo } from './safetensors-tensor.js'
import { allocateTensorData, decodeTensorBytes, makeTensor } from './tensor-bytes.js'

export const parseSafetensorsOptionsSchema = z
  .object({
    /** Where the bytes came from, for error messages (a path or URL). Default: `'safetensors buffer'`. */
    source: z.string().default('safetensors buffer'),
  })
  .strict()
export type ParseSafetensorsOptions = z.input<typeof parseSafetensorsOptionsSchema>

/** The checked options, where the data starts and the parsed header of a whole safetensors file in memory. */
function parseHeaderOf(bytes: Uint8Array, options: ParseSafetensorsOptions) {
  const { source } = parseArgument(parseSafetensorsOptionsSchema, options, 'options')
  if (!(bytes instanceof Uint8Array)) {
    throw new InvalidArgumentError({ argument: 'bytes', value: bytes, message: 'must be a Uint8Array (a Node Buffer is one)' })
  }
  const headerByteLength = readHeaderByteLength(bytes, bytes.length, source)
  const dataStart = 8 + headerByteLength
  return { source, dataStart, header: parseSafetensorsHeader(bytes.subarray(8, dataStart), { source, dataByteLength: bytes.length - dataStart }) }
}

/**
 * Parses a whole safetensors file held in memory. `F32`/`F16`/`BF16` tensors come back as `Float32Array`,
 * `I32` as `Int32Array`, `I64` as `BigInt64Array`; the arrays are copies (they do not share memory with
 * `bytes`). Malformed input, and tensors of other dtypes (`F64`, `U8`, `BOOL`…), throw a `ParseError`
 * whose `path` names the tensor and field. For large files use `openSafetensors`, which reads one tensor
 * at a time.
 */
export function parseSafetensors(bytes: Uint8Array, options: ParseSafetensorsOptions = {}): SafetensorsContents {
  const { source, dataStart, header } = parseHeaderOf(bytes, options)
  const tensors = new Map<string, SafetensorsTensor>()
  for (const [name, info] of header.tensors) {
    const [begin, end] = info.dataOffsets
    tensors.set(name, decodeTensor(name, info, bytes.subarray(dataStart + begin, dataStart + end), source))
  }
  return { metadata: header.metadata, tensors }
}

/** Converts one tensor's file bytes; refuses dtypes Ludic does not read. */
export function decodeTensor(name: string, info: SafetensorsTensorInfo, bytes: Uint8Array, source: string): SafetensorsTensor {
  const dtype = checkReadableDtype(name, info, source)
  const data = allocateOrFail(name, info, source)
  decodeTensorBytes(dtype, bytes, data, 0)
  return makeTensor(dtype, [...info.shape], data)
}

/** Narrows the dtype to one Ludic reads, or throws a `ParseError` naming the tensor and the dtype. */
export function checkReadableDtype(name: string, info: SafetensorsTensorInfo, source: string): (typeof supportedDtypes)[number] {
  if (isSupportedDtype(info.dtype)) return info.dtype
  throw new ParseError({
    source,
    path: ['header', name, 'dtype'],
    message: `tensor ${JSON.stringify(name)} has dtype ${info.dtype}, which Ludic does not read; supported dtypes: ${supportedDtypes.join(', ')}`,
  })
}

/** Allocates the typed array for a tensor; a size the runtime cannot allocate becomes a `ParseError`. */
export function allocateOrFail(name: string, info: SafetensorsTensorInfo, source: string): ReturnType<typeof allocateTensorData> {
  const dtype = checkReadableDtype(name, info, source)
  try {
    return allocateTensorData(dtype, info.elementCount)
  } catch (error) {
    throw new ParseError({
      source,
      path: ['header', name, 'shape'],
      message: `tensor ${JSON.stringify(name)} has ${info.elementCount} elements, more than one typed array can hold here`,
      cause: error,
    })
  }
}

/**
 * A `SafetensorsReader` over a whole safetensors file held in memory (a browser's `fetch` or file picker, an
 * `ArrayBuffer`): the header is parsed (and checked) up front, each tensor is converted only when read, into a
 * fresh array, so a model's weights are not all held twice at once. `close` ends reading. Malformed input throws
 * `ParseError` as `parseSafetensors` does.
 */
export function safetensorsBytesReader(bytes: Uint8Array, options: ParseSafetensorsOptions = {}): SafetensorsReader {
  const { source, dataStart, header } = parseHeaderOf(bytes, options)
  const names = [...header.tensors.keys()]
  let closed = false
  const info = (name: string): SafetensorsTensorInfo => {
    const found = header.tensors.get(name)
    if (found === undefined) throw new InvalidArgumentError({ argument: 'name', value: name, message: `is not a tensor of ${source}` })
    return found
  }
  return {
    metadata: header.metadata,
    names,
    has: (name) => header.tensors.has(name),
    info,
    read: async (name) => {
      if (closed) throw new InvalidArgumentError({ argument: 'name', value: name, message: `cannot be read: the reader of ${source} is closed` })
      const tensorInfo = info(name)
      const [begin, end] = tensorInfo.dataOffsets
      return decodeTensor(name, tensorInfo, bytes.subarray(dataStart + begin, dataStart + end), source)
    },
    close: async () => {
      closed = true
    },
  }
}
