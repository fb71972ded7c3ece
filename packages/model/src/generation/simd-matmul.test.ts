import { createHash } from 'node:crypto'
import { createRandom } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createMatmulArena, matmulModuleBytes, relaxedProbe, relaxedSimdAvailable, simdAvailable } from './simd-matmul.js'

/** `y[b·yStride + r] = Σ_i w[r·wStride + i] · x[b·xStride + i]` in float64. */
function reference(w: Float32Array, x: Float32Array, rows: number, columns: number, batch: number, wStride: number, xStride: number): number[][] {
  return Array.from({ length: batch }, (_, b) =>
    Array.from({ length: rows }, (_, row) => {
      let sum = 0
      for (let index = 0; index < columns; index++) sum += w[row * wStride + index]! * x[b * xStride + index]!
      return sum
    }),
  )
}

describe('createMatmulArena', () => {
  it('runs the WebAssembly SIMD kernel here (Node has WebAssembly SIMD)', () => {
    expect(simdAvailable()).toBe(true)
    expect(createMatmulArena().simd).toBe(true)
    expect(createMatmulArena({ simd: false }).simd).toBe(false)
  })

  it('multiplies and adds in one fused instruction where relaxed SIMD is available (Node 20: turned on; LUDIC_RELAXED_SIMD=0: off)', () => {
    expect(relaxedSimdAvailable()).toBe(process.env.LUDIC_RELAXED_SIMD !== '0')
    expect(createMatmulArena().fused).toBe(relaxedSimdAvailable())
    expect(createMatmulArena({ fused: false }).fused).toBe(false)
    expect(createMatmulArena({ simd: false }).fused).toBe(false)
  })

  // Shapes: rows not a multiple of 4 (the last ones in JavaScript), odd batches (the kernel's single-row tail),
  // columns not a multiple of 4 (all in JavaScript), strides wider than the columns (a cache's rows).
  const shapes = [
    { rows: 12, columns: 8, batch: 1, wStride: 8, xStride: 8, yStride: 12 },
    { rows: 37, columns: 32, batch: 3, wStride: 32, xStride: 32, yStride: 40 },
    { rows: 5, columns: 16, batch: 8, wStride: 20, xStride: 24, yStride: 5 },
    { rows: 9, columns: 6, batch: 2, wStride: 6, xStride: 6, yStride: 9 },
    { rows: 64, columns: 128, batch: 7, wStride: 128, xStride: 128, yStride: 64 },
  ]
  for (const [kind, options] of [
    ['fused SIMD kernel', {}],
    ['SIMD kernel, multiply then add', { fused: false }],
    ['JavaScript', { simd: false }],
  ] as const) {
    it(`matches a float64 product to float32 rounding (${kind})`, () => {
      const random = createRandom(5)
      for (const { rows, columns, batch, wStride, xStride, yStride } of shapes) {
        const arena = createMatmulArena(options)
        arena.reserve(rows * wStride + batch * xStride + batch * yStride + 12)
        const w = arena.allocate(rows * wStride)
        const x = arena.allocate(batch * xStride)
        const y = arena.allocate(batch * yStride)
        w.forEach((_, index) => (w[index] = random.nextFloat() * 2 - 1))
        x.forEach((_, index) => (x[index] = random.nextFloat() * 2 - 1))
        y.fill(123) // untouched outside the rows written
        arena.matmul(w, x, y, rows, columns, batch, wStride, xStride, yStride)
        const expected = reference(w, x, rows, columns, batch, wStride, xStride)
        for (let b = 0; b < batch; b++) {
          for (let row = 0; row < rows; row++) expect(Math.abs(y[b * yStride + row]! - expected[b]![row]!)).toBeLessThan(1e-5 * Math.sqrt(columns))
          for (let row = rows; row < yStride && b * yStride + row < y.length; row++) expect(y[b * yStride + row]).toBe(123)
        }
      }
    })
  }

  it('the fused kernel rounds once where the other rounds twice: the sums differ, by float32 rounding only', () => {
    const [rows, columns, batch] = [64, 256, 8]
    const results = [{}, { fused: false }].map((options) => {
      const arena = createMatmulArena(options)
      arena.reserve(rows * columns + batch * columns + batch * rows)
      const w = arena.allocate(rows * columns)
      const x = arena.allocate(batch * columns)
      const y = arena.allocate(batch * rows)
      const seeded = createRandom(8)
      w.forEach((_, index) => (w[index] = seeded.nextFloat() * 2 - 1))
      x.forEach((_, index) => (x[index] = seeded.nextFloat() * 2 - 1))
      arena.matmul(w, x, y, rows, columns, batch, columns, columns, rows)
      return Array.from(y)
    })
    const differing = results[0]!.filter((value, index) => value !== results[1]![index]).length
    if (relaxedSimdAvailable()) expect(differing).toBeGreaterThan(0)
    else expect(differing).toBe(0)
    for (let index = 0; index < results[0]!.length; index++) expect(Math.abs(results[0]![index]! - results[1]![index]!)).toBeLessThan(1e-4)
  })

  it('weights in the packed layout: the same products as row-major weights bit for bit, and their rows read back', () => {
    const random = createRandom(9)
    // Rows with a row-major tail (not a multiple of 4), columns the kernel skips (not a multiple of 4), odd batches, strides.
    const cases = [
      { rows: 64, columns: 128, batch: 8, xStride: 128, yStride: 64 },
      { rows: 37, columns: 32, batch: 3, xStride: 36, yStride: 40 },
      { rows: 3, columns: 16, batch: 2, xStride: 16, yStride: 3 },
      { rows: 9, columns: 6, batch: 2, xStride: 6, yStride: 9 },
      { rows: 12, columns: 8, batch: 1, xStride: 10, yStride: 12 },
    ]
    for (const options of [{}, { fused: false }, { simd: false }]) {
      for (const { rows, columns, batch, xStride, yStride } of cases) {
        const arena = createMatmulArena(options)
        arena.reserve(3 * rows * columns + batch * (xStride + 2 * yStride) + 20)
        const source = Float32Array.from({ length: rows * columns }, () => random.nextFloat() * 2 - 1)
        const plain = arena.allocate(rows * columns)
        plain.set(source)
        const packed = arena.allocateWeights(source, rows, columns)
        const x = arena.allocate(batch * xStride)
        x.forEach((_, index) => (x[index] = random.nextFloat() * 2 - 1))
        const expected = arena.allocate(batch * yStride)
        const y = arena.allocate(batch * yStride)
        arena.matmul(plain, x, expected, rows, columns, batch, columns, xStride, yStride)
        arena.weightProduct(packed, x, y, rows, columns, batch, xStride, yStride)
        expect(Array.from(y)).toEqual(Array.from(expected))
        const tiled = arena.simd && columns % 4 === 0 && rows >= 4
        expect(Array.from(packed).some((value, index) => value !== source[index])).toBe(tiled)
        const row = new Float32Array(columns + 2)
        for (let index = 0; index < rows; index++) {
          arena.copyWeightRow(packed, index, columns, row, 2)
          expect(Array.from(row.subarray(2))).toEqual(Array.from(source.subarray(index * columns, (index + 1) * columns)))
        }
      }
    }
    expect(() => createMatmulArena().allocateWeights(new Float32Array(6), 2, 4)).toThrow(RangeError)
  })

  it('refuses to allocate past what was reserved, and before reserving', () => {
    const arena = createMatmulArena()
    expect(() => arena.allocate(4)).toThrow('reserve')
    arena.reserve(8)
    arena.allocate(8)
    expect(() => arena.allocate(1_000_000)).toThrow(RangeError)
  })
})

describe('the kernel module', () => {
  const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

  // The digests of the bytes the hand-written assembler emitted before the module moved onto @ludic/tensors'
  // WebAssembly writer: the same module, byte for byte, in every variant (plain or shared memory, two roundings or fused).
  it('is the same bytes in every variant as before it was written with the shared WebAssembly writer', () => {
    expect({ length: matmulModuleBytes(false, false).length, sha256: sha256(matmulModuleBytes(false, false)) }).toEqual({
      length: 1942,
      sha256: '4d41d9f48897f7f938eb69637def3335bd0cd9995c60c5d710919b84738e3adf',
    })
    expect({ length: matmulModuleBytes(false, true).length, sha256: sha256(matmulModuleBytes(false, true)) }).toEqual({
      length: 1870,
      sha256: 'a8af70dc481f4d84857805b2dda363f8e0819c0e4f5f889a407e3e004491ce07',
    })
    expect({ length: matmulModuleBytes(true, false).length, sha256: sha256(matmulModuleBytes(true, false)) }).toEqual({
      length: 1945,
      sha256: '193ba0a18853d907de8c8ded8d4ec390db6e367b6b01875a87f21771d43c92c6',
    })
    expect({ length: matmulModuleBytes(true, true).length, sha256: sha256(matmulModuleBytes(true, true)) }).toEqual({
      length: 1873,
      sha256: '8396ae4c109a78a2375a4afb2f13261a94fafd3554cc3237cda94696d8cde6c9',
    })
    expect({ length: relaxedProbe.length, sha256: sha256(relaxedProbe) }).toEqual({
      length: 37,
      sha256: '82f1e8813aca62afd16844b7ed943c5d1b6be2a15dc4eac7da4a94940f28bd75',
    })
  })
})
