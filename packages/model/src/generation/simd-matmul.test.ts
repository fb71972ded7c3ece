import { createRandom } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createMatmulArena, simdAvailable } from './simd-matmul.js'

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

  // Shapes: rows not a multiple of 4 (the last ones in JavaScript), odd batches (the kernel's single-row tail),
  // columns not a multiple of 4 (all in JavaScript), strides wider than the columns (a cache's rows).
  const shapes = [
    { rows: 12, columns: 8, batch: 1, wStride: 8, xStride: 8, yStride: 12 },
    { rows: 37, columns: 32, batch: 3, wStride: 32, xStride: 32, yStride: 40 },
    { rows: 5, columns: 16, batch: 8, wStride: 20, xStride: 24, yStride: 5 },
    { rows: 9, columns: 6, batch: 2, wStride: 6, xStride: 6, yStride: 9 },
    { rows: 64, columns: 128, batch: 7, wStride: 128, xStride: 128, yStride: 64 },
  ]
  for (const simd of [true, false]) {
    it(`matches a float64 product to float32 rounding (${simd ? 'SIMD kernel' : 'JavaScript'})`, () => {
      const random = createRandom(5)
      for (const { rows, columns, batch, wStride, xStride, yStride } of shapes) {
        const arena = createMatmulArena({ simd })
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

  it('refuses to allocate past what was reserved, and before reserving', () => {
    const arena = createMatmulArena()
    expect(() => arena.allocate(4)).toThrow('reserve')
    arena.reserve(8)
    arena.allocate(8)
    expect(() => arena.allocate(1_000_000)).toThrow(RangeError)
  })
})
