/**
 * Where each tensor goes in a safetensors file being written, and the header that says so.
 *
 * The layout is the reference implementation's (`safetensors` crate, `prepare`), so the bytes match
 * Python's `safetensors.numpy.save` for the same input: tensors sorted by dtype alignment, largest first
 * (I64, F32, I32, BF16, F16), then by name (UTF-8 byte order); the header JSON compact, with
 * `__metadata__` first when given and each entry as `{"dtype","shape","data_offsets"}`; the header padded
 * with spaces to a multiple of 8 bytes so that every tensor starts aligned.
 *
 * One difference: Python writes `__metadata__` keys in hash order (it varies between runs when there are
 * two or more); here they keep the order of the object given.
 */
import { InvalidArgumentError, describeValue } from '@ludic/core'
import { z } from 'zod'
import { dtypeAlignmentRank, dtypeBytes, type SupportedDtype } from './safetensors-dtype.js'
import { metadataKey } from './safetensors-header.js'
import type { SafetensorsTensorData, SafetensorsTensorsInput } from './safetensors-tensor.js'

export interface SafetensorsLayoutEntry {
  name: string
  dtype: SupportedDtype
  shape: number[]
  data: SafetensorsTensorData
  /** Byte range in the data section. */
  begin: number
  end: number
}

export interface SafetensorsLayout {
  /** The first bytes of the file: 8-byte little-endian header length, then the padded header JSON. */
  header: Uint8Array
  /** Tensors in file order. */
  entries: SafetensorsLayoutEntry[]
  /** Size of the whole file. */
  byteLength: number
}

const encoder = new TextEncoder()

/**
 * `__metadata__` to write: an object of strings. Checked here only for being an object, and passed through
 * as given (a zod record would rebuild it and drop a `"__proto__"` key); `planSafetensorsLayout` then
 * checks every value and names the bad one.
 */
export const metadataSchema = z.custom<Record<string, string>>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  'must be an object of strings',
)

/**
 * Validates tensors and metadata to write and lays them out. Bad input throws `InvalidArgumentError`
 * naming the tensor and field (`tensors["layer.weight"].shape`).
 */
export function planSafetensorsLayout(tensors: SafetensorsTensorsInput, metadata: Readonly<Record<string, string>> | undefined): SafetensorsLayout {
  const validated = validateTensors(tensors).map((entry) => ({ ...entry, nameBytes: encoder.encode(entry.name) }))
  validated.sort((left, right) => dtypeAlignmentRank(right.dtype) - dtypeAlignmentRank(left.dtype) || compareBytes(left.nameBytes, right.nameBytes))

  const parts: string[] = []
  if (metadata !== undefined) {
    validateMetadata(metadata)
    const pairs = Object.entries(metadata).map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value)}`)
    parts.push(`"${metadataKey}":{${pairs.join(',')}}`)
  }
  const entries: SafetensorsLayoutEntry[] = []
  let offset = 0
  for (const { name, dtype, shape, data } of validated) {
    const begin = offset
    offset += data.length * dtypeBytes(dtype)
    entries.push({ name, dtype, shape, data, begin, end: offset })
    parts.push(`${JSON.stringify(name)}:{"dtype":"${dtype}","shape":[${shape.join(',')}],"data_offsets":[${begin},${offset}]}`)
  }
  const json = encoder.encode(`{${parts.join(',')}}`)
  const paddedLength = Math.ceil(json.length / 8) * 8
  const header = new Uint8Array(8 + paddedLength)
  new DataView(header.buffer).setBigUint64(0, BigInt(paddedLength), true)
  header.set(json, 8)
  header.fill(0x20, 8 + json.length)
  return { header, entries, byteLength: header.length + offset }
}

const lonelySurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Checks metadata to write: an object whose keys and values are strings UTF-8 can carry. */
export function validateMetadata(metadata: unknown): void {
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
    throw new InvalidArgumentError({ argument: 'metadata', value: metadata, message: 'must be an object of strings' })
  }
  for (const [key, value] of Object.entries(metadata)) {
    const argument = `metadata[${JSON.stringify(key)}]`
    if (typeof value !== 'string') throw new InvalidArgumentError({ argument, value, message: 'metadata values must be strings' })
    if (lonelySurrogate.test(key) || lonelySurrogate.test(value)) {
      throw new InvalidArgumentError({ argument, value, message: 'holds a lone UTF-16 surrogate, which UTF-8 JSON cannot carry' })
    }
  }
}

interface ValidatedTensor {
  name: string
  dtype: SupportedDtype
  shape: number[]
  data: SafetensorsTensorData
}

const dtypesByData: Readonly<Record<string, readonly SupportedDtype[]>> = {
  Float32Array: ['F32', 'F16', 'BF16'],
  Int32Array: ['I32'],
  BigInt64Array: ['I64'],
}

/** Checks every tensor to write; returns them with their dtype filled in. */
export function validateTensors(tensors: SafetensorsTensorsInput): ValidatedTensor[] {
  let pairs: [unknown, unknown][]
  if (tensors instanceof Map) pairs = [...tensors.entries()]
  else if (typeof tensors === 'object' && tensors !== null && !Array.isArray(tensors) && !ArrayBuffer.isView(tensors)) {
    pairs = Object.entries(tensors)
  } else {
    throw new InvalidArgumentError({
      argument: 'tensors',
      value: tensors,
      message: 'must be an object or a Map from tensor names to { dtype?, shape, data }',
    })
  }
  return pairs.map(([name, tensor]) => validateTensor(name, tensor))
}

function validateTensor(name: unknown, tensor: unknown): ValidatedTensor {
  if (typeof name !== 'string') throw new InvalidArgumentError({ argument: 'tensors', value: name, message: 'tensor names must be strings' })
  const argument = `tensors[${JSON.stringify(name)}]`
  if (name === metadataKey) throw new InvalidArgumentError({ argument, value: name, message: `"${metadataKey}" is reserved for metadata` })
  if (lonelySurrogate.test(name)) {
    throw new InvalidArgumentError({
      argument,
      value: name,
      message: 'the name holds a lone UTF-16 surrogate, which UTF-8 JSON cannot carry',
    })
  }
  if (typeof tensor !== 'object' || tensor === null) {
    throw new InvalidArgumentError({ argument, value: tensor, message: 'must be an object { dtype?, shape, data }' })
  }
  const { dtype, shape, data } = tensor as Record<string, unknown>
  const kind = ArrayBuffer.isView(data) ? (data as unknown as { [Symbol.toStringTag]: string })[Symbol.toStringTag] : undefined
  const allowed = kind === undefined ? undefined : dtypesByData[kind]
  if (allowed === undefined) {
    throw new InvalidArgumentError({
      argument: `${argument}.data`,
      value: data,
      message: 'must be a Float32Array, Int32Array or BigInt64Array',
    })
  }
  const resolved = dtype === undefined ? allowed[0]! : (dtype as SupportedDtype)
  if (!allowed.includes(resolved)) {
    throw new InvalidArgumentError({
      argument: `${argument}.dtype`,
      value: dtype,
      message: `cannot write ${kind} data as ${describeValue(dtype)}; ${kind} can be written as ${allowed.join(', ')}`,
    })
  }
  if (!Array.isArray(shape) || !shape.every((size) => Number.isSafeInteger(size) && size >= 0)) {
    throw new InvalidArgumentError({
      argument: `${argument}.shape`,
      value: shape,
      message: 'must be an array of non-negative integers',
    })
  }
  const elementCount = shape.reduce((product: number, size: number) => product * size, 1)
  const typed = data as SafetensorsTensorData
  if (elementCount !== typed.length) {
    throw new InvalidArgumentError({
      argument: `${argument}.shape`,
      value: shape,
      message: `has ${elementCount} elements, but the data holds ${typed.length}`,
    })
  }
  return { name, dtype: resolved, shape: [...(shape as number[])], data: typed }
}

function compareBytes(left: Uint8Array, right: Uint8Array): number {
  const length = Math.min(left.length, right.length)
  for (let index = 0; index < length; index++) {
    if (left[index] !== right[index]) return left[index]! - right[index]!
  }
  return left.length - right.length
}
