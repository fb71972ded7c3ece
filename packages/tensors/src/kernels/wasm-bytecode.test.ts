import { createHash } from 'node:crypto'
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
      sharedMemory: false,
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
