import { createHash } from 'node:crypto'
import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { encodeModule, instruction as op, signedLeb128, unsignedLeb128, valueType } from './wasm-bytecode.js'
import { simdKernelsModuleBytes } from './wasm-simd-kernels.js'
import { webAssembly } from './webassembly-api.js'

describe('the WebAssembly writer', () => {
  it('encodes LEB128 like the examples of the specification', () => {
    expect(unsignedLeb128(0)).toEqual([0x00])
    expect(unsignedLeb128(127)).toEqual([0x7f])
    expect(unsignedLeb128(128)).toEqual([0x80, 0x01])
    expect(unsignedLeb128(624485)).toEqual([0xe5, 0x8e, 0x26])
    expect(signedLeb128(-1)).toEqual([0x7f])
    expect(signedLeb128(63)).toEqual([0x3f])
    expect(signedLeb128(64)).toEqual([0xc0, 0x00])
    expect(signedLeb128(-123456)).toEqual([0xc0, 0xbb, 0x78])
  })

  it('writes a module that runs: a loop summing floats in the imported memory', () => {
    // sum(address, count): memory[address] = Σ memory[address + 4i], i < count
    const [address, count, total] = [0, 1, 2]
    const bytes = encodeModule({
      memory: { shared: false },
      functions: [
        {
          exportName: 'sum',
          parameters: [valueType.i32, valueType.i32],
          locals: [valueType.i32, valueType.f32],
          body: [
            op.f32Const0,
            op.localSet(total + 1),
            op.i32Const(0),
            op.localSet(total),
            op.block(
              op.loop(
                op.localGet(total),
                op.localGet(count),
                op.i32GreaterOrEqualUnsigned,
                op.branchIf(1),
                op.localGet(total + 1),
                op.localGet(address),
                op.localGet(total),
                op.i32Const(2),
                op.i32Shl,
                op.i32Add,
                op.f32Load(),
                op.f32Add,
                op.localSet(total + 1),
                op.localGet(total),
                op.i32Const(1),
                op.i32Add,
                op.localSet(total),
                op.branch(0),
              ),
            ),
            op.localGet(address),
            op.localGet(total + 1),
            op.f32Store(),
          ],
        },
      ],
    })
    expect(webAssembly.validate(bytes)).toBe(true)
    const memory = new webAssembly.Memory({ initial: 1 })
    const instance = new webAssembly.Instance(new webAssembly.Module(bytes), { env: { memory } })
    new Float32Array(memory.buffer as ArrayBuffer).set([1.5, 2, 3.25, 4], 4)
    ;(instance.exports.sum as (address: number, count: number) => void)(16, 4)
    expect(new Float32Array(memory.buffer as ArrayBuffer)[4]).toBe(10.75)
  })

  it('writes functions with results, the lanes of a vector, and modules without a memory', () => {
    // lanes(address) → f32: the sum of the four floats of the vector at `address`
    const lanes = encodeModule({
      memory: { shared: false, minimumPages: 1 },
      functions: [
        {
          exportName: 'lanes',
          parameters: [valueType.i32],
          results: [valueType.f32],
          locals: [valueType.v128],
          body: [
            op.localGet(0),
            op.v128Load(),
            op.localSet(1),
            [0, 1, 2, 3].map((lane) => [op.localGet(1), op.f32x4ExtractLane(lane), lane > 0 ? op.f32Add : []]),
          ],
        },
      ],
    })
    const memory = new webAssembly.Memory({ initial: 1 })
    new Float32Array(memory.buffer as ArrayBuffer).set([1, 2.5, -4, 8], 4)
    const instance = new webAssembly.Instance(new webAssembly.Module(lanes), { env: { memory } })
    expect((instance.exports.lanes as (address: number) => number)(16)).toBe(7.5)
    // No memory: no import section; two signatures, one type each.
    const add = encodeModule({
      functions: [
        {
          exportName: 'add',
          parameters: [valueType.i32, valueType.i32],
          results: [valueType.i32],
          locals: [],
          body: [op.localGet(0), op.localGet(1), op.i32Add],
        },
        { parameters: [], locals: [], body: [] },
      ],
    })
    expect([...add.subarray(8, 20)]).toEqual([0x01, 0x0a, 0x02, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f, 0x60, 0x00, 0x00])
    expect(add[20]).toBe(0x03) // the function section right after the types
    const plain = new webAssembly.Instance(new webAssembly.Module(add), {})
    expect((plain.exports.add as (a: number, b: number) => number)(40, 2)).toBe(42)
  })

  it('declares the imported memory with its minimum pages, plain or shared', () => {
    for (const shared of [false, true]) {
      const bytes = encodeModule({ memory: { shared, minimumPages: 2 }, functions: [{ parameters: [], locals: [], body: [] }] })
      const module = new webAssembly.Module(bytes)
      const memoryOf = (pages: number) => new webAssembly.Memory(shared ? { initial: pages, maximum: pages, shared } : { initial: pages })
      expect(() => new webAssembly.Instance(module, { env: { memory: memoryOf(1) } })).toThrow(/memory/i)
      expect(() => new webAssembly.Instance(module, { env: { memory: memoryOf(2) } })).not.toThrow()
    }
  })

  it('refuses a minimum of pages or a lane out of range, naming it', () => {
    for (const minimumPages of [-1, 1.5, 65537]) {
      expect(() => encodeModule({ memory: { shared: false, minimumPages }, functions: [] })).toThrow(InvalidArgumentError)
      expect(() => encodeModule({ memory: { shared: false, minimumPages }, functions: [] })).toThrow(/memory\.minimumPages/)
    }
    expect(() => op.f32x4ExtractLane(4)).toThrow(/'lane' \(value: 4\)/)
  })

  it('writes valid SIMD kernel modules for shared and unshared memories', () => {
    expect(webAssembly.validate(simdKernelsModuleBytes(false))).toBe(true)
    expect(webAssembly.validate(simdKernelsModuleBytes(true))).toBe(true)
  })

  // Digests of the kernels' bytes before the writer grew what @ludic/model's matmul kernel needs: unchanged by it.
  it('writes the SIMD kernel modules byte for byte as before', () => {
    const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')
    expect(sha256(simdKernelsModuleBytes(false))).toBe('dc2cb9989c03ddb8fc5ffc240d886289fe40704f7f73c41684fd574bd7bcbafd')
    expect(sha256(simdKernelsModuleBytes(true))).toBe('31c2501690e140ae5cf69db9f12b1d2fc6b222a9248a137b5b7ed5f30d5f6e94')
  })
})
