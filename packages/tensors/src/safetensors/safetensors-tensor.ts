import type { SafetensorsDtype } from './safetensors-dtype.js'

/**
 * A tensor read from a safetensors file, as plain typed-array data (little-endian row-major in the file,
 * host order here). `F16` and `BF16` elements are widened to `Float32Array`; `I64` stays 64-bit
 * (`bigInt64ArrayToInt32Array` narrows it where every value fits).
 */
export type SafetensorsTensor =
  | { dtype: 'F32' | 'F16' | 'BF16'; shape: number[]; data: Float32Array }
  | { dtype: 'I32'; shape: number[]; data: Int32Array }
  | { dtype: 'I64'; shape: number[]; data: BigInt64Array }

/** The typed arrays a safetensors tensor is read into or written from. */
export type SafetensorsTensorData = Float32Array | Int32Array | BigInt64Array

/**
 * A tensor to write. `dtype` defaults from the data: `Float32Array` → `F32`, `Int32Array` → `I32`,
 * `BigInt64Array` → `I64`. Float data can also be written as `F16` or `BF16` (rounded to nearest, ties
 * to even). `shape` must multiply out to `data.length` (`[]` is a scalar with one element).
 */
export type SafetensorsTensorInput =
  | { dtype?: 'F32' | 'F16' | 'BF16'; shape: readonly number[]; data: Float32Array }
  | { dtype?: 'I32'; shape: readonly number[]; data: Int32Array }
  | { dtype?: 'I64'; shape: readonly number[]; data: BigInt64Array }

/** Tensors to write, by name: a plain object or a `Map` (a `Map` allows any name, `__proto__` included). */
export type SafetensorsTensorsInput = Readonly<Record<string, SafetensorsTensorInput>> | ReadonlyMap<string, SafetensorsTensorInput>

/** What the header says about one tensor, before its data is read. */
export interface SafetensorsTensorInfo {
  /** Any dtype the format knows; only `supportedDtypes` can be read into typed arrays. */
  dtype: SafetensorsDtype
  shape: number[]
  /** Elements: the product of `shape` (1 for a scalar). */
  elementCount: number
  /** Bytes the tensor takes in the file (`dataOffsets[1] - dataOffsets[0]`). */
  byteLength: number
  /** `[begin, end)` relative to the start of the data section, as written in the header. */
  dataOffsets: [number, number]
}

/** A whole safetensors file in memory. */
export interface SafetensorsContents {
  /** The `__metadata__` strings (empty when the file has none). */
  metadata: Record<string, string>
  /** Tensors in file order (by data offset). */
  tensors: Map<string, SafetensorsTensor>
}

/**
 * Lazy access to a safetensors file or a sharded checkpoint: the header is parsed up front, each tensor is
 * read from disk only when asked for.
 */
export interface SafetensorsReader {
  /** The `__metadata__` strings (for a sharded checkpoint: the union over its shards). */
  readonly metadata: Readonly<Record<string, string>>
  /** Tensor names, in file order. */
  readonly names: readonly string[]
  has(name: string): boolean
  /** Dtype, shape and byte length of a tensor; throws `InvalidArgumentError` for an unknown name. */
  info(name: string): SafetensorsTensorInfo
  /** Reads one tensor's bytes from disk and converts them; the file is never loaded whole. */
  read(name: string): Promise<SafetensorsTensor>
  /** Closes the file descriptors. Reading afterwards throws. */
  close(): Promise<void>
}
