/**
 * Moving tensor elements between safetensors bytes (little-endian) and typed arrays, in pieces, so that
 * file readers and writers can convert in bounded chunks instead of holding a second copy of a tensor.
 */
import type { SupportedDtype } from './safetensors-dtype.js'
import { dtypeBytes } from './safetensors-dtype.js'
import { decodeBfloat16, decodeFloat16, encodeBfloat16, encodeFloat16 } from './half-precision.js'
import type { SafetensorsTensor, SafetensorsTensorData } from './safetensors-tensor.js'

/** Elements per chunk when converting `F16`/`BF16` (1 MiB of file bytes). */
export const conversionChunkElements = 1 << 19

export const hostIsLittleEndian = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1

/** A zero-filled typed array of the kind `dtype` is read into. */
export function allocateTensorData(dtype: SupportedDtype, elementCount: number): SafetensorsTensorData {
  switch (dtype) {
    case 'F32':
    case 'F16':
    case 'BF16':
      return new Float32Array(elementCount)
    case 'I32':
      return new Int32Array(elementCount)
    case 'I64':
      return new BigInt64Array(elementCount)
  }
}

/** Packs a dtype, shape and matching data into the tensor union. */
export function makeTensor(dtype: SupportedDtype, shape: number[], data: SafetensorsTensorData): SafetensorsTensor {
  return { dtype, shape, data } as SafetensorsTensor
}

/** True when the file bytes of `dtype` are the host bytes of its typed array (no conversion needed). */
export function isStoredAsIs(dtype: SupportedDtype): boolean {
  return dtype === 'F32' || dtype === 'I32' || dtype === 'I64'
}

/** Reverses the byte order of every `elementSize`-byte element of `bytes`, in place. */
export function swapByteOrder(bytes: Uint8Array, elementSize: number): void {
  for (let start = 0; start + elementSize <= bytes.length; start += elementSize) {
    for (let low = start, high = start + elementSize - 1; low < high; low++, high--) {
      const byte = bytes[low]!
      bytes[low] = bytes[high]!
      bytes[high] = byte
    }
  }
}

/** The bytes of `data` as a `Uint8Array` view (no copy). */
export function bytesOf(data: SafetensorsTensorData): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
}

/**
 * Converts little-endian file bytes of `dtype` into `target`, starting at element `elementOffset`.
 * `bytes.length` must be a whole number of elements.
 */
export function decodeTensorBytes(dtype: SupportedDtype, bytes: Uint8Array, target: SafetensorsTensorData, elementOffset: number): void {
  if (dtype === 'F16') {
    decodeFloat16(bytes, target as Float32Array, elementOffset)
    return
  }
  if (dtype === 'BF16') {
    decodeBfloat16(bytes, target as Float32Array, elementOffset)
    return
  }
  const elementSize = dtypeBytes(dtype)
  const destination = new Uint8Array(target.buffer, target.byteOffset + elementOffset * elementSize, bytes.length)
  destination.set(bytes)
  if (!hostIsLittleEndian) swapByteOrder(destination, elementSize)
}

/**
 * The little-endian file bytes of elements `[start, end)` of `data` written as `dtype`: a view of `data`
 * when no conversion is needed (little-endian host, same width), else a new buffer.
 */
export function encodeTensorBytes(dtype: SupportedDtype, data: SafetensorsTensorData, start: number, end: number): Uint8Array {
  const elementSize = dtypeBytes(dtype)
  if (dtype === 'F16' || dtype === 'BF16') {
    const bytes = new Uint8Array((end - start) * 2)
    if (dtype === 'F16') encodeFloat16(data as Float32Array, start, end, bytes)
    else encodeBfloat16(data as Float32Array, start, end, bytes)
    return bytes
  }
  const view = new Uint8Array(data.buffer, data.byteOffset + start * elementSize, (end - start) * elementSize)
  if (hostIsLittleEndian) return view
  const copy = view.slice()
  swapByteOrder(copy, elementSize)
  return copy
}
