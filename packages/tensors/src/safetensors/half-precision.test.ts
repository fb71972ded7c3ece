import { createRandom } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import {
  bfloat16BitsToFloat32,
  decodeBfloat16,
  decodeFloat16,
  encodeBfloat16,
  encodeFloat16,
  float16BitsToFloat32,
  float32ToBfloat16Bits,
  float32ToFloat16Bits,
} from './half-precision.js'

const bitsToFloat = (bits: number): number => new Float32Array(Uint32Array.of(bits).buffer)[0]!

/** The unbiased binary exponent of a float32 value, read from its bits (exact, unlike `Math.log2`). */
function float32Exponent(value: number): number {
  const biased = (new Uint32Array(Float32Array.of(value).buffer)[0]! >>> 23) & 0xff
  return biased === 0 ? -126 : biased - 127
}

/** Rounds a float32 `value` to a grid with `mantissaBits` fraction bits and `minimumExponent`, ties to even. */
function referenceRound(value: number, mantissaBits: number, minimumExponent: number, overflow: number): number {
  if (!Number.isFinite(value) || value === 0) return value
  const exponent = Math.max(float32Exponent(value), minimumExponent)
  const unit = 2 ** (exponent - mantissaBits)
  const quotient = value / unit // exact: value is a float32, unit a power of two
  let rounded = Math.round(quotient)
  if (Math.abs(quotient % 1) === 0.5 && rounded % 2 !== 0) rounded -= 1 // Math.round ties toward +Infinity; want even
  const result = rounded * unit
  return Math.abs(result) >= overflow ? Math.sign(value) * Infinity : result === 0 ? Math.sign(value) * 0 : result
}

describe('float16', () => {
  it('widens every bit pattern to the value the IEEE formula gives', () => {
    for (let half = 0; half < 65536; half++) {
      const sign = half & 0x8000 ? -1 : 1
      const exponent = (half >>> 10) & 0x1f
      const mantissa = half & 0x3ff
      const expected =
        exponent === 0x1f
          ? mantissa === 0
            ? sign * Infinity
            : Number.NaN
          : exponent === 0
            ? sign * mantissa * 2 ** -24
            : sign * (1 + mantissa / 1024) * 2 ** (exponent - 15)
      expect(Object.is(float16BitsToFloat32(half), expected), `pattern 0x${half.toString(16)}`).toBe(true)
    }
  })

  it('narrows every widened pattern back to itself (NaN stays NaN)', () => {
    for (let half = 0; half < 65536; half++) {
      const value = float16BitsToFloat32(half)
      const back = float32ToFloat16Bits(value)
      if (Number.isNaN(value)) expect(Number.isNaN(float16BitsToFloat32(back))).toBe(true)
      else expect(back, `pattern 0x${half.toString(16)}`).toBe(half)
    }
  })

  it('rounds random float32 values to nearest, ties to even', () => {
    const random = createRandom(16)
    for (let trial = 0; trial < 20000; trial++) {
      // Exponents spread over the half range and beyond: subnormals, overflow, ties (low bits cleared).
      const exponent = 127 - 30 + random.nextInt(50)
      const mantissa = random.nextInt(1 << 23) & (trial % 3 === 0 ? ~0xfff : ~0)
      const value = bitsToFloat(((random.nextInt(2) << 31) | (exponent << 23) | mantissa) >>> 0)
      const expected = referenceRound(value, 10, -14, 65520)
      expect(Object.is(float16BitsToFloat32(float32ToFloat16Bits(value)), expected), `value ${value}`).toBe(true)
    }
  })

  it('handles the boundaries', () => {
    expect(float32ToFloat16Bits(65504)).toBe(0x7bff)
    expect(float32ToFloat16Bits(65519.99)).toBe(0x7bff)
    expect(float32ToFloat16Bits(65520)).toBe(0x7c00)
    expect(float32ToFloat16Bits(-Infinity)).toBe(0xfc00)
    expect(float32ToFloat16Bits(2 ** -24)).toBe(0x0001)
    expect(float32ToFloat16Bits(2 ** -25)).toBe(0x0000) // tie to even: zero
    expect(float32ToFloat16Bits(3 * 2 ** -25)).toBe(0x0002) // tie to even: 2 × 2^-24
    expect(float32ToFloat16Bits(-0)).toBe(0x8000)
    expect(float32ToFloat16Bits(Number.NaN)).toBe(0x7e00)
    expect(float16BitsToFloat32(0x03ff)).toBe(1023 * 2 ** -24)
  })
})

describe('bfloat16', () => {
  it('widens by shifting, and narrows every widened pattern back to itself', () => {
    for (let bfloat = 0; bfloat < 65536; bfloat++) {
      const value = bfloat16BitsToFloat32(bfloat)
      expect(new Uint32Array(Float32Array.of(value).buffer)[0]! >>> 16 === bfloat || Number.isNaN(value)).toBe(true)
      if (!Number.isNaN(value)) expect(float32ToBfloat16Bits(value)).toBe(bfloat)
    }
  })

  it('rounds random float32 values to nearest, ties to even', () => {
    const random = createRandom(17)
    for (let trial = 0; trial < 20000; trial++) {
      const exponent = random.nextInt(255) // every finite exponent, subnormals included
      const mantissa = random.nextInt(1 << 23) & (trial % 3 === 0 ? ~0xffff | 0x8000 : ~0)
      const value = bitsToFloat(((random.nextInt(2) << 31) | (exponent << 23) | mantissa) >>> 0)
      const expected = referenceRound(value, 7, -126, 2 ** 128)
      expect(Object.is(bfloat16BitsToFloat32(float32ToBfloat16Bits(value)), expected), `value ${value}`).toBe(true)
    }
  })

  it('keeps NaN a quiet NaN with its sign', () => {
    expect(float32ToBfloat16Bits(Number.NaN)).toBe(0x7fc0)
    expect(float32ToBfloat16Bits(bitsToFloat(0xff800001))).toBe(0xffc0)
    expect(float32ToBfloat16Bits(3.4028234663852886e38)).toBe(0x7f80)
  })
})

describe('bulk conversion', () => {
  it('round-trips through little-endian bytes at any offset', () => {
    const values = Float32Array.of(0, -0, 1.5, -2, 65504, Infinity, -Infinity, Number.NaN, 2 ** -24, 0.333251953125)
    const bytes = new Uint8Array(1 + values.length * 2).subarray(1) // odd byte offset
    encodeFloat16(values, 0, values.length, bytes)
    expect([bytes[4], bytes[5]]).toEqual([0x00, 0x3e]) // 1.5 = 0x3e00, little-endian
    const target = new Float32Array(values.length + 2)
    decodeFloat16(bytes, target, 2)
    expect(Array.from(target.subarray(2))).toEqual(Array.from(values))

    encodeBfloat16(values, 2, 4, bytes)
    decodeBfloat16(bytes.subarray(0, 4), target, 0)
    expect(Array.from(target.subarray(0, 2))).toEqual([1.5, -2])
  })

  it('widens in place from the upper half of the target, element for element as the scalar functions do', () => {
    const random = createRandom(7)
    for (const [decode, widen] of [
      [decodeFloat16, float16BitsToFloat32],
      [decodeBfloat16, bfloat16BitsToFloat32],
    ] as const) {
      for (const count of [1, 2, 7, 1000]) {
        const patterns = Array.from({ length: count }, () => random.nextInt(65536))
        const target = new Float32Array(count)
        const upperHalf = new Uint8Array(target.buffer, 2 * count, 2 * count)
        patterns.forEach((bits, index) => {
          upperHalf[2 * index] = bits & 0xff
          upperHalf[2 * index + 1] = bits >>> 8
        })
        decode(upperHalf, target, 0)
        const expected = patterns.map(widen)
        expect(Array.from(target, (value) => (Number.isNaN(value) ? 'NaN' : value))).toEqual(expected.map((value) => (Number.isNaN(value) ? 'NaN' : value)))
      }
    }
  })
})
