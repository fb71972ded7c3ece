import { spawnSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { createRandom } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createMatmulArena, sharedMemoryAvailable, sharedProductMinimum, type MatmulArena } from './simd-matmul.js'

/** Shapes of at least `sharedProductMinimum` multiply-adds: rows not a multiple of 4 (a JavaScript tail), odd batches, strides wider than the columns. */
const shapes = [
  { rows: 1026, columns: 256, batch: 8, wStride: 256, xStride: 256, yStride: 1026 },
  { rows: 515, columns: 128, batch: 3, wStride: 132, xStride: 136, yStride: 520 },
  { rows: 2048, columns: 64, batch: 1, wStride: 64, xStride: 64, yStride: 2048 },
]

interface Buffers {
  w: Float32Array
  x: Float32Array
  y: Float32Array
}

/** Each shape's w and x (random, seeded) and y in `arena`. */
function fill(arena: MatmulArena, seed: number): Buffers[] {
  const random = createRandom(seed)
  arena.reserve(shapes.reduce((total, shape) => total + shape.rows * shape.wStride + shape.batch * (shape.xStride + shape.yStride) + 12, 0))
  return shapes.map(({ rows, wStride, batch, xStride, yStride }) => {
    const w = arena.allocate(rows * wStride)
    const x = arena.allocate(batch * xStride)
    w.forEach((_, index) => (w[index] = random.nextFloat() * 2 - 1))
    x.forEach((_, index) => (x[index] = random.nextFloat() * 2 - 1))
    return { w, x, y: arena.allocate(batch * yStride) }
  })
}

function multiply(arena: MatmulArena, buffers: Buffers[]): void {
  shapes.forEach(({ rows, columns, batch, wStride, xStride, yStride }, index) => {
    const { w, x, y } = buffers[index]!
    arena.matmul(w, x, y, rows, columns, batch, wStride, xStride, yStride)
  })
}

describe('createMatmulArena with worker threads', () => {
  it('shares products with a worker: bit for bit the single-thread kernel, and a plain loop to float32 rounding', async () => {
    expect(sharedMemoryAvailable()).toBe(true)
    expect(shapes.every(({ rows, columns, batch }) => rows * columns * batch >= sharedProductMinimum)).toBe(true)
    const single = createMatmulArena()
    const alone = fill(single, 3)
    multiply(single, alone)
    const shared = createMatmulArena({ threads: 2 })
    const buffers = fill(shared, 3)
    expect(shared.threads).toBe(2)
    try {
      // The worker starts in the background; run until it has taken some chunks (the first products may all run here).
      for (let round = 0; round < 500 && shared.helperChunks === 0; round++) {
        multiply(shared, buffers)
        await sleep(5)
      }
      expect(shared.helperChunks).toBeGreaterThan(0)
      for (let round = 0; round < 20; round++) {
        shapes.forEach(({ rows, batch, yStride }, index) => {
          for (let b = 0; b < batch; b++) buffers[index]!.y.fill(Number.NaN, b * yStride, b * yStride + rows) // what each product writes
        })
        multiply(shared, buffers)
        buffers.forEach(({ y }, index) => expect(y).toEqual(alone[index]!.y))
      }
      shapes.forEach(({ rows, columns, batch, wStride, xStride, yStride }, index) => {
        const { w, x, y } = buffers[index]!
        for (let b = 0; b < batch; b++) {
          for (let row = 0; row < rows; row += 7) {
            let sum = 0
            for (let column = 0; column < columns; column++) sum += w[row * wStride + column]! * x[b * xStride + column]!
            expect(Math.abs(y[b * yStride + row]! - sum)).toBeLessThan(1e-5 * Math.sqrt(columns))
          }
        }
      })
    } finally {
      shared.dispose()
    }
  })

  it('shares products over packed weights too: bit for bit the single-thread kernel over row-major ones', async () => {
    const [rows, columns, batch] = [1026, 256, 8]
    const random = createRandom(4)
    const source = Float32Array.from({ length: rows * columns }, () => random.nextFloat() * 2 - 1)
    const input = Float32Array.from({ length: batch * columns }, () => random.nextFloat() * 2 - 1)
    const single = createMatmulArena()
    single.reserve(rows * columns + batch * (columns + rows) + 12)
    const w = single.allocate(rows * columns)
    w.set(source)
    const x = single.allocate(batch * columns)
    x.set(input)
    const expected = single.allocate(batch * rows)
    single.matmul(w, x, expected, rows, columns, batch, columns, columns, rows)
    const shared = createMatmulArena({ threads: 2 })
    shared.reserve(2 * rows * columns + batch * (columns + rows) + 12)
    try {
      const packed = shared.allocateWeights(source, rows, columns)
      const plain = shared.allocate(rows * columns)
      plain.set(source)
      const sharedX = shared.allocate(batch * columns)
      sharedX.set(input)
      const y = shared.allocate(batch * rows)
      for (let round = 0; round < 500 && shared.helperChunks === 0; round++) {
        shared.weightProduct(packed, sharedX, y, rows, columns, batch, columns, rows)
        await sleep(5)
      }
      expect(shared.helperChunks).toBeGreaterThan(0)
      for (let round = 0; round < 10; round++) {
        y.fill(Number.NaN)
        shared.weightProduct(packed, sharedX, y, rows, columns, batch, columns, rows)
        expect(y).toEqual(expected)
        // A row-major product right after, on the same workers: they switch kernels with the product.
        y.fill(Number.NaN)
        shared.matmul(plain, sharedX, y, rows, columns, batch, columns, columns, rows)
        expect(y).toEqual(expected)
      }
    } finally {
      shared.dispose()
    }
  })

  it('runs on this thread alone for one thread, in JavaScript, and after dispose — same results', async () => {
    expect(createMatmulArena({ threads: 1 }).threads).toBe(1)
    const javascript = createMatmulArena({ simd: false, threads: 2 })
    expect(javascript.threads).toBe(1)
    const single = createMatmulArena()
    const alone = fill(single, 8)
    multiply(single, alone)
    const shared = createMatmulArena({ threads: 2 })
    const buffers = fill(shared, 8)
    expect(shared.threads).toBe(2)
    shared.dispose()
    expect(shared.threads).toBe(1)
    const chunks = shared.helperChunks
    multiply(shared, buffers)
    expect(shared.helperChunks).toBe(chunks)
    buffers.forEach(({ y }, index) => expect(y).toEqual(alone[index]!.y))
    // The worker is back in the pool: the next arena gets it.
    const next = createMatmulArena({ threads: 2 })
    next.reserve(16)
    expect(next.threads).toBe(2)
    next.dispose()
    await sleep(1)
  })

  it('a process that used a shared arena exits by itself, even without dispose (the workers are unreferenced)', () => {
    const module = fileURLToPath(new URL('./simd-matmul.ts', import.meta.url))
    // The Node entry registers the worker threads first (node-platform.ts); this script imports the module directly.
    const nodePlatform = fileURLToPath(new URL('../node-platform.ts', import.meta.url))
    const script = `
      import ${JSON.stringify(nodePlatform)}
      import { createMatmulArena } from ${JSON.stringify(module)}
      const arena = createMatmulArena({ threads: 2 })
      arena.reserve(600 * 256 + 8 * 256 + 8 * 600)
      const w = arena.allocate(600 * 256).fill(0.5)
      const x = arena.allocate(8 * 256).fill(2)
      const y = arena.allocate(8 * 600)
      for (let round = 0; round < 50; round++) arena.matmul(w, x, y, 600, 256, 8, 256, 256, 600)
      await new Promise((resolve) => setTimeout(resolve, 100))
      arena.matmul(w, x, y, 600, 256, 8, 256, 256, 600)
      console.log(JSON.stringify({ threads: arena.threads, first: y[0], last: y[y.length - 1] }))
    `
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], {
      cwd: fileURLToPath(new URL('.', import.meta.url)),
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect(child.error).toBeUndefined()
    expect(child.status, child.stderr).toBe(0)
    expect(JSON.parse(child.stdout.trim())).toEqual({ threads: 2, first: 256, last: 256 })
  })
})
