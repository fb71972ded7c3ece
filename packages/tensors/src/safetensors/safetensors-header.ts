/**
 * Reading and validating a safetensors header: the 8-byte little-endian length, then that many bytes of
 * UTF-8 JSON mapping tensor names to `{ dtype, shape, data_offsets }` (plus an optional `__metadata__`
 * object of strings).
 *
 * The checks follow Hugging Face's reference implementation (`safetensors` crate, `Metadata::validate`):
 * sorted by offset, the tensors must tile the data section exactly, from byte 0 to its end, with no hole
 * and no overlap (empty tensors may share an offset); each byte range must match shape × dtype size.
 * Beyond it, a repeated name or field is an error (the crate keeps the last one silently). Every problem
 * is a `ParseError` whose `path` starts with `'header'` and names the tensor and the field.
 */
import { describeValue, ParseError } from '@ludic/core'
import { findDuplicateJsonKey } from './find-duplicate-json-key.js'
import { dtypeBits, isSafetensorsDtype, supportedDtypes } from './safetensors-dtype.js'
import type { SafetensorsTensorInfo } from './safetensors-tensor.js'

/** Headers above this size are refused, as the reference implementation does (100 MB). */
export const maxHeaderByteLength = 100_000_000

/** The reserved header key for free-form string metadata. */
export const metadataKey = '__metadata__'

export interface SafetensorsHeader {
  metadata: Record<string, string>
  /** Tensors in file order (by data offset). */
  tensors: Map<string, SafetensorsTensorInfo>
}

/**
 * Reads the header length from the first 8 bytes of a file of `totalByteLength` bytes and checks that the
 * header fits in the file. Returns the header length in bytes (the data section starts 8 bytes later).
 */
export function readHeaderByteLength(prefix: Uint8Array, totalByteLength: number, source: string): number {
  if (totalByteLength < 8 || prefix.length < 8) {
    throw new ParseError({
      source,
      path: ['header'],
      message: `the input is ${totalByteLength} bytes, too short for the 8-byte header length that starts every safetensors file`,
    })
  }
  const length = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true)
  if (length > BigInt(maxHeaderByteLength)) {
    throw new ParseError({
      source,
      path: ['header'],
      // The length is not echoed: it is the file's first 8 bytes, which must not leak through an error (any file can be named).
      message: `the header length (the first 8 bytes) is more than the ${maxHeaderByteLength}-byte limit (this is not a safetensors file, or it is corrupt)`,
    })
  }
  const headerByteLength = Number(length)
  if (8 + headerByteLength > totalByteLength) {
    throw new ParseError({
      source,
      path: ['header'],
      message: `the header length (the first 8 bytes) reaches past the end of the input (${totalByteLength} bytes in all): the file is truncated or not a safetensors file`,
    })
  }
  return headerByteLength
}

/**
 * Parses and validates the header JSON. `dataByteLength` is the size of the data section (the input's
 * length minus 8 minus the header length): the tensors must cover it exactly.
 */
export function parseSafetensorsHeader(headerBytes: Uint8Array, options: { source: string; dataByteLength: number }): SafetensorsHeader {
  const { source, dataByteLength } = options
  const fail = (path: (string | number)[], message: string, cause?: unknown): never => {
    throw new ParseError({ source, path: ['header', ...path], message, cause })
  }

  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(headerBytes)
  } catch (error) {
    return fail([], 'the header is not valid UTF-8', error)
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return fail([], `the header is not valid JSON (${error instanceof Error ? error.message : String(error)})`, error)
  }
  if (!isPlainObject(json)) {
    return fail([], `the header must be a JSON object mapping tensor names to entries, got ${jsonKind(json)}`)
  }
  const duplicate = findDuplicateJsonKey(text)
  if (duplicate !== undefined) {
    const what = duplicate.length === 1 ? `tensor name ${JSON.stringify(duplicate[0])}` : `field ${JSON.stringify(duplicate.at(-1))}`
    return fail(duplicate, `${what} appears more than once in the header`)
  }

  const metadata = parseMetadata(json[metadataKey], fail)
  const entries: [string, SafetensorsTensorInfo][] = []
  for (const name of Object.keys(json)) {
    if (name === metadataKey) continue
    entries.push([name, parseEntry(name, json[name], fail)])
  }
  checkCoverage(entries, dataByteLength, fail)
  return { metadata, tensors: new Map(entries) }
}

type Fail = (path: (string | number)[], message: string, cause?: unknown) => never

function parseMetadata(value: unknown, fail: Fail): Record<string, string> {
  if (value === undefined || value === null) return {}
  if (!isPlainObject(value)) {
    return fail([metadataKey], `${metadataKey} must be an object of strings, got ${jsonKind(value)}`)
  }
  const pairs: [string, string][] = []
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== 'string') {
      return fail([metadataKey, key], `${metadataKey} values must be strings, got ${jsonKind(item)} ${describeValue(item)}`)
    }
    pairs.push([key, item])
  }
  return Object.fromEntries(pairs) // defines own properties, so a "__proto__" key stays a key
}

function parseEntry(name: string, entry: unknown, fail: Fail): SafetensorsTensorInfo {
  if (!isPlainObject(entry)) {
    return fail([name], `the entry of tensor ${JSON.stringify(name)} must be an object { dtype, shape, data_offsets }, got ${jsonKind(entry)}`)
  }
  for (const field of ['dtype', 'shape', 'data_offsets'] as const) {
    if (!Object.hasOwn(entry, field)) return fail([name, field], `tensor ${JSON.stringify(name)} has no "${field}" field`)
  }

  const dtype = entry.dtype
  if (typeof dtype !== 'string') return fail([name, 'dtype'], `dtype must be a string, got ${jsonKind(dtype)}`)
  if (!isSafetensorsDtype(dtype)) {
    return fail([name, 'dtype'], `unknown dtype ${describeValue(dtype)} for tensor ${JSON.stringify(name)}; Ludic reads ${supportedDtypes.join(', ')}`)
  }

  const shape = entry.shape
  if (!Array.isArray(shape)) return fail([name, 'shape'], `shape must be an array of sizes, got ${jsonKind(shape)}`)
  let elementCount = 1
  for (let axis = 0; axis < shape.length; axis++) {
    const size: unknown = shape[axis]
    if (typeof size !== 'number' || !Number.isInteger(size) || size < 0) {
      return fail([name, 'shape', axis], `shape sizes must be non-negative integers, got ${describeValue(size)} in ${describeValue(shape)}`)
    }
    if (!Number.isSafeInteger(size) || elementCount * size > Number.MAX_SAFE_INTEGER) {
      return fail([name, 'shape'], `shape ${describeValue(shape)} has too many elements (more than 2^53)`)
    }
    elementCount *= size
  }
  const bits = elementCount * dtypeBits(dtype)
  if (!Number.isSafeInteger(bits)) return fail([name, 'shape'], `shape ${describeValue(shape)} of dtype ${dtype} is too large`)
  if (bits % 8 !== 0) {
    return fail([name, 'shape'], `shape ${describeValue(shape)} of ${dtype} (${dtypeBits(dtype)}-bit elements) does not end on a byte boundary`)
  }

  const offsets = entry.data_offsets
  if (!Array.isArray(offsets) || offsets.length !== 2) {
    return fail([name, 'data_offsets'], `data_offsets must be an array [begin, end], got ${describeValue(offsets)}`)
  }
  const [begin, end]: unknown[] = offsets
  for (const offset of [begin, end]) {
    if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) {
      return fail([name, 'data_offsets'], `data_offsets must be non-negative integers, got ${describeValue(offsets)}`)
    }
  }
  if ((end as number) < (begin as number)) {
    return fail([name, 'data_offsets'], `data_offsets ${describeValue(offsets)} are reversed: end before begin`)
  }
  const byteLength = bits / 8
  if ((end as number) - (begin as number) !== byteLength) {
    return fail(
      [name, 'data_offsets'],
      `data_offsets ${describeValue(offsets)} span ${(end as number) - (begin as number)} bytes, but shape ${describeValue(
        shape,
      )} of ${dtype} takes ${byteLength}`,
    )
  }
  return { dtype, shape: shape as number[], elementCount, byteLength, dataOffsets: [begin as number, end as number] }
}

/** The tensors, sorted by offset, must tile [0, dataByteLength) with no hole, overlap or overrun. */
function checkCoverage(entries: [string, SafetensorsTensorInfo][], dataByteLength: number, fail: Fail): void {
  entries.sort(([, left], [, right]) => left.dataOffsets[0] - right.dataOffsets[0] || left.dataOffsets[1] - right.dataOffsets[1])
  let covered = 0
  let previous: string | undefined
  for (const [name, info] of entries) {
    const [begin, end] = info.dataOffsets
    const after = previous === undefined ? 'at the start of the data section' : `after tensor ${JSON.stringify(previous)}`
    if (begin < covered) {
      fail([name, 'data_offsets'], `data_offsets [${begin}, ${end}] overlap tensor ${JSON.stringify(previous)}, which ends at byte ${covered}`)
    }
    if (begin > covered) {
      fail([name, 'data_offsets'], `data_offsets [${begin}, ${end}] leave a hole: bytes ${covered} to ${begin} ${after} belong to no tensor`)
    }
    if (end > dataByteLength) {
      fail(
        [name, 'data_offsets'],
        `the data is truncated: tensor ${JSON.stringify(name)} ends at byte ${end} of the data section, which holds only ${dataByteLength} bytes`,
      )
    }
    covered = end
    previous = name
  }
  if (covered < dataByteLength) {
    const path = previous === undefined ? [] : [previous, 'data_offsets']
    const after = previous === undefined ? 'the header lists no tensor, but' : `after the last tensor (${JSON.stringify(previous)}, ending at byte ${covered})`
    fail(path, `${after} ${dataByteLength - covered} bytes of the data section belong to no tensor`)
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function jsonKind(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'object') return 'an object'
  return `a ${typeof value}`
}
