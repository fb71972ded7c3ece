import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { parseSafetensors } from './parse-safetensors.js'
import { serializeSafetensors } from './serialize-safetensors.js'
import type { SafetensorsTensorInput } from './safetensors-tensor.js'

const specials = Float32Array.of(0, -0, 1, -1.5, 2 ** -24, 2 ** -133, 65504, 3.4028234663852886e38, Infinity, -Infinity, Number.NaN, Math.PI)

describe('serializeSafetensors', () => {
  it('matches the reference implementation’s own test vectors', () => {
    // safetensors/src/tensor.rs, test_serialization and test_empty.
    const out = serializeSafetensors({ 'attn.0': { shape: [1, 2, 3], data: Float32Array.of(0, 1, 2, 3, 4, 5) } })
    expect(Array.from(out)).toEqual([
      64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100, 116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97,
      112, 101, 34, 58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125,
      0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64,
    ])
    expect(Array.from(serializeSafetensors({}))).toEqual([8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32])
    expect(Array.from(serializeSafetensors({}, { metadata: { framework: 'pt' } }))).toEqual([
      40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97, 116, 97, 95, 95, 34, 58, 123, 34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34,
      58, 34, 112, 116, 34, 125, 125, 32, 32, 32, 32, 32,
    ])
  })

  it('round-trips every dtype, special values included', () => {
    const tensors: Record<string, SafetensorsTensorInput> = {
      f32: { shape: [3, 4], data: specials },
      f16: { dtype: 'F16', shape: [12], data: specials },
      bf16: { dtype: 'BF16', shape: [2, 6], data: specials },
      i32: { shape: [2, 2], data: Int32Array.of(-2147483648, 2147483647, -1, 0) },
      i64: { shape: [3], data: BigInt64Array.of(-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n) },
      scalar: { shape: [], data: Float32Array.of(7) },
      empty: { shape: [0, 5], data: new Float32Array(0) },
    }
    const parsed = parseSafetensors(serializeSafetensors(tensors))
    expect([...parsed.tensors.keys()]).toEqual(['i64', 'empty', 'f32', 'scalar', 'i32', 'bf16', 'f16'])
    expect(parsed.tensors.get('f32')).toEqual({ dtype: 'F32', shape: [3, 4], data: specials })
    expect(parsed.tensors.get('i32')).toEqual({ dtype: 'I32', shape: [2, 2], data: tensors.i32!.data })
    expect(parsed.tensors.get('i64')).toEqual({ dtype: 'I64', shape: [3], data: tensors.i64!.data })
    expect(parsed.tensors.get('scalar')).toEqual({ dtype: 'F32', shape: [], data: Float32Array.of(7) })
    expect(parsed.tensors.get('empty')).toEqual({ dtype: 'F32', shape: [0, 5], data: new Float32Array(0) })
    // Exactly representable in half precision: all but 2^-133 (→ 0), 3.4e38 (→ Infinity) and π (rounded).
    expect([...parsed.tensors.get('f16')!.data]).toEqual([0, -0, 1, -1.5, 2 ** -24, 0, 65504, Infinity, Infinity, -Infinity, Number.NaN, 3.140625])
    // Bfloat16 keeps the float32 range: 2^-133 (its smallest subnormal) survives, 65504 rounds to 65536, π to 3.140625.
    expect([...parsed.tensors.get('bf16')!.data]).toEqual([0, -0, 1, -1.5, 2 ** -24, 2 ** -133, 65536, Infinity, Infinity, -Infinity, Number.NaN, 3.140625])
    expect(parsed.tensors.get('bf16')!.dtype).toBe('BF16')
  })

  it('keeps metadata, and accepts a Map (any name, "__proto__" too)', () => {
    const bytes = serializeSafetensors(new Map([['__proto__', { shape: [1], data: Int32Array.of(5) }]]), {
      metadata: { format: 'pt', note: 'ünïcödé ✓' },
    })
    const parsed = parseSafetensors(bytes)
    expect(parsed.metadata).toEqual({ format: 'pt', note: 'ünïcödé ✓' })
    expect([...parsed.tensors.get('__proto__')!.data]).toEqual([5])
    const protoKey = parseSafetensors(serializeSafetensors({}, { metadata: JSON.parse('{"__proto__":"x"}') })).metadata
    expect(Object.entries(protoKey)).toEqual([['__proto__', 'x']])
  })

  it('writes from typed-array views at any offset', () => {
    const backing = new Float32Array(10).map((_, index) => index)
    const parsed = parseSafetensors(serializeSafetensors({ view: { dtype: 'F16', shape: [3], data: backing.subarray(4, 7) } }))
    expect([...parsed.tensors.get('view')!.data]).toEqual([4, 5, 6])
  })

  it('converts more than one chunk of half-precision data', () => {
    const data = new Float32Array((1 << 19) + 3).map((_, index) => index % 2048)
    const parsed = parseSafetensors(serializeSafetensors({ big: { dtype: 'F16', shape: [data.length], data } }))
    const read = parsed.tensors.get('big')!.data as Float32Array
    expect(read.length).toBe(data.length)
    expect(read.every((value, index) => value === data[index])).toBe(true)
  })

  it('validates its options', () => {
    expect(() => serializeSafetensors({}, { metadata: { step: 1 } } as never)).toThrow(InvalidArgumentError)
    expect(() => serializeSafetensors({}, { metadata: { step: 1 } } as never)).toThrow(/'metadata\["step"\]'/)
    expect(() => serializeSafetensors({}, { metadata: ['pt'] } as never)).toThrow(/'options.metadata'/)
    expect(() => serializeSafetensors({}, { metdata: {} } as never)).toThrow(/options/)
  })
})
