import { createRandom } from '@ludic/core'
import { afterEach, describe, expect, it } from 'vitest'
import { sampleToken, sampleTokens } from './generation/sampling.js'
import { samplingHelperRows } from './generation/sampling-workers.js'
import { createMatmulArena } from './generation/simd-matmul.js'
import { browserParameterBytes, defaultMaxParameterBytes } from './model/parameter-budget.js'
import { platform, setPlatform } from './platform.js'

// The browser entry registers none of Node's parts (node-platform.ts, a setup file of this package's tests, does):
// these tests take them away, one at a time, and put them back after.
const registered = { ...platform() }
afterEach(() => setPlatform(registered))

describe('without Node’s parts registered (as in a browser)', () => {
  it('the node entry registered every part', () => {
    expect(Object.keys(registered).sort()).toEqual(['enableRelaxedSimd', 'environmentVariable', 'lendMatmulHelpers', 'samplingHelper', 'totalMemoryBytes'])
  })

  it('samples every row on the calling thread, with the same tokens, when no sampling helper is registered', () => {
    const vocab = 512
    const rows = 128
    const logits = Float32Array.from({ length: rows * vocab }, (_, index) => Math.sin(index * 0.37) * 6)
    const parameters = { temperature: 1, topK: 0, topP: 1, minP: 0 }
    const batch = () => Array.from({ length: rows }, (_, index) => ({ offset: index * vocab, parameters, random: createRandom(index) }))
    const expected = batch().map((row) => sampleToken(logits, row.offset, vocab, row.parameters, row.random))
    setPlatform({ samplingHelper: undefined })
    const before = samplingHelperRows()
    expect(sampleTokens(logits, vocab, batch())).toEqual(expected)
    expect(samplingHelperRows()).toBe(before) // none drawn by the helper thread
  })

  it('budgets parameters at browserParameterBytes, without os.totalmem', () => {
    setPlatform({ totalMemoryBytes: undefined })
    expect(defaultMaxParameterBytes()).toBe(browserParameterBytes)
    setPlatform({ totalMemoryBytes: () => 2 ** 30 })
    expect(defaultMaxParameterBytes()).toBe(2 ** 29) // Node's: half of the machine's memory
  })

  it('runs a matmul arena on the calling thread alone, with the same products, when no helper threads are lent', () => {
    const rows = 64
    const columns = 32
    const w = Float32Array.from({ length: rows * columns }, (_, index) => ((index * 7) % 13) / 13 - 0.5)
    const x = Float32Array.from({ length: columns }, (_, index) => ((index * 5) % 11) / 11 - 0.5)
    const product = (arena: ReturnType<typeof createMatmulArena>) => {
      arena.reserve(rows * columns + columns + rows + 12)
      const [wa, xa, ya] = [arena.allocate(rows * columns), arena.allocate(columns), arena.allocate(rows)]
      wa.set(w)
      xa.set(x)
      arena.matmul(wa, xa, ya, rows, columns, 1, columns, columns, rows)
      return Array.from(ya)
    }
    const single = createMatmulArena()
    const expected = product(single)
    single.dispose()
    setPlatform({ lendMatmulHelpers: undefined })
    const alone = createMatmulArena({ threads: 4 })
    expect(alone.threads).toBe(1)
    expect(product(alone)).toEqual(expected)
    alone.dispose()
  })
})
