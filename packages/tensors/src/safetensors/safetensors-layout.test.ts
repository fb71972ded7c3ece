import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { planSafetensorsLayout } from './safetensors-layout.js'
import type { SafetensorsTensorsInput } from './safetensors-tensor.js'

const headerText = (header: Uint8Array) => new TextDecoder().decode(header.subarray(8))

describe('planSafetensorsLayout', () => {
  it('orders by dtype alignment (I64, F32, I32, BF16, F16), then by UTF-8 bytes of the name', () => {
    const layout = planSafetensorsLayout(
      {
        half: { dtype: 'F16', shape: [1], data: new Float32Array(1) },
        brain: { dtype: 'BF16', shape: [1], data: new Float32Array(1) },
        ids: { shape: [1], data: new Int32Array(1) },
        '\u{1F600}': { shape: [1], data: new Float32Array(1) }, // UTF-16 sorts it before U+FF21; UTF-8 after
        '\uFF21': { shape: [1], data: new Float32Array(1) },
        b: { shape: [1], data: new Float32Array(1) },
        B: { shape: [1], data: new Float32Array(1) },
        positions: { shape: [1], data: new BigInt64Array(1) },
      },
      undefined,
    )
    expect(layout.entries.map((entry) => entry.name)).toEqual(['positions', 'B', 'b', '\uFF21', '\u{1F600}', 'ids', 'brain', 'half'])
    expect(layout.entries.map((entry) => [entry.begin, entry.end])).toEqual([
      [0, 8],
      [8, 12],
      [12, 16],
      [16, 20],
      [20, 24],
      [24, 28],
      [28, 30],
      [30, 32],
    ])
  })

  it('pads the header with spaces to a multiple of 8 and writes metadata first', () => {
    const layout = planSafetensorsLayout({ w: { shape: [], data: new Float32Array(1) } }, { format: 'pt' })
    const text = headerText(layout.header)
    const json = '{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}'
    expect(json.length).toBe(84)
    expect(text).toBe(`${json}    `)
    expect(layout.header.length % 8).toBe(0)
    expect(Number(new DataView(layout.header.buffer).getBigUint64(0, true))).toBe(layout.header.length - 8)
    expect(layout.byteLength).toBe(layout.header.length + 4)
  })

  it.each<[string, unknown, RegExp]>([
    ['not an object', [1, 2], /'tensors'.*must be an object or a Map/],
    [
      'shape product off',
      { w: { shape: [2, 3], data: new Float32Array(5) } },
      /'tensors\["w"\].shape' \(value: \[2, 3\]\): has 6 elements, but the data holds 5/,
    ],
    ['negative size', { w: { shape: [-1], data: new Float32Array(1) } }, /'tensors\["w"\].shape'.*non-negative integers/],
    ['shape not an array', { w: { shape: 3, data: new Float32Array(3) } }, /'tensors\["w"\].shape'/],
    ['data a plain array', { w: { shape: [1], data: [1] } }, /'tensors\["w"\].data'.*Float32Array, Int32Array or BigInt64Array/],
    ['data a Float64Array', { w: { shape: [1], data: new Float64Array(1) } }, /'tensors\["w"\].data'/],
    [
      'dtype against the data',
      { w: { dtype: 'I64', shape: [1], data: new Int32Array(1) } },
      /'tensors\["w"\].dtype'.*cannot write Int32Array data as "I64"; Int32Array can be written as I32/,
    ],
    ['unknown dtype', { w: { dtype: 'F64', shape: [1], data: new Float32Array(1) } }, /can be written as F32, F16, BF16/],
    ['reserved name', { __metadata__: { shape: [1], data: new Float32Array(1) } }, /"__metadata__" is reserved/],
    ['lone surrogate', { '\uD800': { shape: [1], data: new Float32Array(1) } }, /lone UTF-16 surrogate/],
    ['tensor not an object', { w: 3 }, /'tensors\["w"\]'.*must be an object/],
  ])('refuses %s with an InvalidArgumentError naming the tensor', (_, tensors, message) => {
    const call = () => planSafetensorsLayout(tensors as SafetensorsTensorsInput, undefined)
    expect(call).toThrow(InvalidArgumentError)
    expect(call).toThrow(message)
  })

  it('refuses metadata that is not strings', () => {
    expect(() => planSafetensorsLayout({}, { step: 3 } as unknown as Record<string, string>)).toThrow(/'metadata\["step"\]'.*must be strings/)
  })
})
