/**
 * IEEE half precision (`F16`) and bfloat16 (`BF16`) conversions to and from float32, exact in both
 * directions: widening is lossless (subnormals, ±0, ±Infinity and NaN included); narrowing rounds to
 * nearest, ties to even, like numpy's `astype(np.float16)` and `ml_dtypes.bfloat16`.
 *
 * The bulk functions read and write little-endian bytes (the safetensors layout) and work on the float32
 * bit patterns, so NaN payloads and signs survive.
 */

const scratchFloat = new Float32Array(1)
const scratchBits = new Uint32Array(scratchFloat.buffer)

/** Float32 bit pattern of a half-precision bit pattern (exact). */
export function float16BitsToFloat32Bits(half: number): number {
  const sign = (half & 0x8000) << 16
  const exponent = (half >>> 10) & 0x1f
  let mantissa = half & 0x3ff
  if (exponent === 0x1f) return (sign | 0x7f800000 | (mantissa << 13)) >>> 0 // Infinity, NaN (payload kept)
  if (exponent !== 0) return (sign | ((exponent + 112) << 23) | (mantissa << 13)) >>> 0
  if (mantissa === 0) return sign >>> 0 // ±0
  // Subnormal half: mantissa × 2^-24. Shift the leading one into the implicit position.
  let float32Exponent = 113
  while ((mantissa & 0x400) === 0) {
    mantissa <<= 1
    float32Exponent--
  }
  return (sign | (float32Exponent << 23) | ((mantissa & 0x3ff) << 13)) >>> 0
}

/**
 * Half-precision bit pattern of a float32 bit pattern, rounded to nearest, ties to even. Values at or above
 * 65520 in magnitude become Infinity; below 2^-25 they become ±0. NaN stays NaN with the top payload bits,
 * as numpy does.
 */
export function float32BitsToFloat16Bits(bits: number): number {
  const sign = (bits >>> 16) & 0x8000
  const exponent = (bits >>> 23) & 0xff
  const mantissa = bits & 0x7fffff
  if (exponent === 0xff) {
    if (mantissa === 0) return sign | 0x7c00
    const nan = 0x7c00 | (mantissa >>> 13)
    return sign | (nan === 0x7c00 ? 0x7c01 : nan)
  }
  if (exponent > 142) return sign | 0x7c00 // ≥ 2^16: beyond rounding range
  if (exponent < 102) return sign // < 2^-25: rounds to zero
  if (exponent < 113) {
    // Subnormal half: value / 2^-24 = (1.mantissa) × 2^(exponent - 126).
    const significand = mantissa | 0x800000
    const shift = 126 - exponent // 14..24
    let half = significand >>> shift
    const remainder = significand & ((1 << shift) - 1)
    const halfway = 1 << (shift - 1)
    if (remainder > halfway || (remainder === halfway && (half & 1) === 1)) half++
    return sign | half
  }
  // Normal: keep 10 mantissa bits; a carry may roll into the exponent (and up to Infinity), which is correct.
  let half = ((exponent - 112) << 10) | (mantissa >>> 13)
  const remainder = mantissa & 0x1fff
  if (remainder > 0x1000 || (remainder === 0x1000 && (half & 1) === 1)) half++
  return sign | half
}

/** Float32 bit pattern of a bfloat16 bit pattern (exact: bfloat16 is the top half of a float32). */
export function bfloat16BitsToFloat32Bits(bfloat: number): number {
  return (bfloat << 16) >>> 0
}

/** Bfloat16 bit pattern of a float32 bit pattern, rounded to nearest, ties to even; NaN becomes ±0x7fc0. */
export function float32BitsToBfloat16Bits(bits: number): number {
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) return ((bits >>> 16) & 0x8000) | 0x7fc0
  const roundingBias = 0x7fff + ((bits >>> 16) & 1)
  return ((bits + roundingBias) / 65536) & 0xffff
}

/** The float32 value of a half-precision bit pattern. */
export function float16BitsToFloat32(half: number): number {
  scratchBits[0] = float16BitsToFloat32Bits(half & 0xffff)
  return scratchFloat[0]!
}

/** The half-precision bit pattern nearest to `value` (after rounding it to float32). */
export function float32ToFloat16Bits(value: number): number {
  scratchFloat[0] = value
  return float32BitsToFloat16Bits(scratchBits[0]!)
}

/** The float32 value of a bfloat16 bit pattern. */
export function bfloat16BitsToFloat32(bfloat: number): number {
  scratchBits[0] = bfloat16BitsToFloat32Bits(bfloat & 0xffff)
  return scratchFloat[0]!
}

/** The bfloat16 bit pattern nearest to `value` (after rounding it to float32). */
export function float32ToBfloat16Bits(value: number): number {
  scratchFloat[0] = value
  return float32BitsToBfloat16Bits(scratchBits[0]!)
}

let float16Table: Uint32Array | undefined

/** All 65,536 widened half-precision patterns (256 KiB, built on first use). */
function float16ToFloat32BitsTable(): Uint32Array {
  if (float16Table === undefined) {
    float16Table = new Uint32Array(65536)
    for (let half = 0; half < 65536; half++) float16Table[half] = float16BitsToFloat32Bits(half)
  }
  return float16Table
}

const littleEndianHost = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1

/**
 * `bytes` as 16-bit elements when they can be read as one (a little-endian host, an even byte offset), so the
 * widening loops read whole elements instead of assembling bytes; undefined otherwise.
 */
function halvesOf(bytes: Uint8Array): Uint16Array | undefined {
  return littleEndianHost && bytes.byteOffset % 2 === 0 ? new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.length >>> 1) : undefined
}

/**
 * Widens little-endian half-precision `bytes` into `target` from element `targetOffset` on (one table lookup per
 * element). `bytes` may lie in `target`'s own buffer at or after byte `4·targetOffset + 2·count` (its upper half,
 * as `openSafetensors` reads them): elements are widened front to back, each written after its source was read.
 */
export function decodeFloat16(bytes: Uint8Array, target: Float32Array, targetOffset = 0): void {
  const table = float16ToFloat32BitsTable()
  const targetBits = new Uint32Array(target.buffer, target.byteOffset, target.length)
  const count = bytes.length >>> 1
  const halves = halvesOf(bytes)
  if (halves !== undefined) {
    for (let index = 0; index < count; index++) targetBits[targetOffset + index] = table[halves[index]!]!
    return
  }
  for (let index = 0; index < count; index++) {
    targetBits[targetOffset + index] = table[bytes[2 * index]! | (bytes[2 * index + 1]! << 8)]!
  }
}

/**
 * Widens little-endian bfloat16 `bytes` into `target` from element `targetOffset` on: each element is the top
 * half of a float32, so this is one shift per element, over whole 16-bit elements. Like `decodeFloat16`, `bytes`
 * may lie in the upper half of `target`'s own buffer.
 */
export function decodeBfloat16(bytes: Uint8Array, target: Float32Array, targetOffset = 0): void {
  const targetBits = new Int32Array(target.buffer, target.byteOffset, target.length)
  const count = bytes.length >>> 1
  const halves = halvesOf(bytes)
  if (halves !== undefined) {
    for (let index = 0; index < count; index++) targetBits[targetOffset + index] = halves[index]! << 16
    return
  }
  for (let index = 0; index < count; index++) {
    targetBits[targetOffset + index] = (bytes[2 * index]! << 16) | (bytes[2 * index + 1]! << 24)
  }
}

/** Narrows `source[start..end)` to little-endian half precision in `target` (2 bytes per element). */
export function encodeFloat16(source: Float32Array, start: number, end: number, target: Uint8Array): void {
  const sourceBits = new Uint32Array(source.buffer, source.byteOffset, source.length)
  for (let index = start; index < end; index++) {
    const half = float32BitsToFloat16Bits(sourceBits[index]!)
    const position = 2 * (index - start)
    target[position] = half & 0xff
    target[position + 1] = half >>> 8
  }
}

/** Narrows `source[start..end)` to little-endian bfloat16 in `target` (2 bytes per element). */
export function encodeBfloat16(source: Float32Array, start: number, end: number, target: Uint8Array): void {
  const sourceBits = new Uint32Array(source.buffer, source.byteOffset, source.length)
  for (let index = start; index < end; index++) {
    const bfloat = float32BitsToBfloat16Bits(sourceBits[index]!)
    const position = 2 * (index - start)
    target[position] = bfloat & 0xff
    target[position + 1] = bfloat >>> 8
  }
}
