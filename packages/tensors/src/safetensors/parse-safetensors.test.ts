import { InvalidArgumentError, ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { parseSafetensors, safetensorsBytesReader } from './parse-safetensors.js'
import { serializeSafetensors } from './serialize-safetensors.js'

describe('parseSafetensors', () => {
  it('returns copies that do not share memory with the input', () => {
    const bytes = serializeSafetensors({ w: { shape: [2], data: Float32Array.of(1, 2) } })
    const { tensors } = parseSafetensors(bytes)
    const data = tensors.get('w')!.data
    expect(data.buffer).not.toBe(bytes.buffer)
    bytes.fill(0)
    expect([...data]).toEqual([1, 2])
  })

  it('reads from a view at an unaligned offset (a Buffer slice)', () => {
    const bytes = serializeSafetensors({ w: { shape: [2], data: BigInt64Array.of(-1n, 7n) } })
    const shifted = new Uint8Array(bytes.length + 3)
    shifted.set(bytes, 3)
    expect([...parseSafetensors(Buffer.from(shifted.buffer, 3)).tensors.get('w')!.data]).toEqual([-1n, 7n])
  })

  it('names the source in errors', () => {
    const call = () => parseSafetensors(new Uint8Array(3), { source: 'checkpoints/step-10.safetensors' })
    expect(call).toThrow(ParseError)
    expect(call).toThrow(/^Cannot parse checkpoints\/step-10\.safetensors at header: /)
  })

  it('refuses input that is not bytes, and unknown options', () => {
    expect(() => parseSafetensors('{}' as never)).toThrow(InvalidArgumentError)
    expect(() => parseSafetensors(new Uint8Array(0), { sauce: 'x' } as never)).toThrow(InvalidArgumentError)
  })
})

describe('safetensorsBytesReader', () => {
  it('reads each tensor of in-memory bytes on demand, as parseSafetensors gives it', async () => {
    const bytes = serializeSafetensors({
      weight: { dtype: 'BF16', shape: [2, 2], data: new Float32Array([1, -2, 0.5, 4]) },
      ids: { shape: [3], data: new Int32Array([7, 8, 9]) },
    })
    const reader = safetensorsBytesReader(bytes, { source: 'model.safetensors' })
    const whole = parseSafetensors(bytes)
    expect(reader.names).toEqual([...whole.tensors.keys()])
    expect(reader.has('weight')).toBe(true)
    expect(reader.info('weight')).toMatchObject({ dtype: 'BF16', shape: [2, 2] })
    for (const name of reader.names) expect(await reader.read(name)).toEqual(whole.tensors.get(name))
    await reader.close()
    await expect(reader.read('weight')).rejects.toThrow(/closed/)
  })

  it('gives typed errors for bad bytes and unknown names', () => {
    expect(() => safetensorsBytesReader(new Uint8Array([1, 2, 3]), { source: 'x.safetensors' })).toThrow(ParseError)
    expect(() => safetensorsBytesReader([1, 2] as unknown as Uint8Array)).toThrow(InvalidArgumentError)
    const reader = safetensorsBytesReader(serializeSafetensors({ a: { shape: [1], data: new Float32Array([1]) } }))
    expect(() => reader.info('b')).toThrow(InvalidArgumentError)
  })
})
