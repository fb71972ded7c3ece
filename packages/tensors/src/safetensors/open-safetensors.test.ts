import { mkdtemp, rm, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError, LudicError, ParseError } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openSafetensors } from './open-safetensors.js'
import { serializeSafetensors } from './serialize-safetensors.js'

describe('openSafetensors', () => {
  let directory: string
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'ludic-open-safetensors-'))
  })
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true, maxRetries: 5 })
  })

  it('parses the header up front and reads tensors lazily, one byte range each', async () => {
    const path = join(directory, 'lazy.safetensors')
    const half = new Float32Array((1 << 19) * 2 + 5).map((_, index) => (index % 1000) / 4) // three conversion chunks
    await writeFile(
      path,
      serializeSafetensors(
        {
          embed: { shape: [2, 3], data: Float32Array.of(1, 2, 3, 4, 5, 6) },
          half: { dtype: 'F16', shape: [half.length], data: half },
          brain: { dtype: 'BF16', shape: [2], data: Float32Array.of(1.5, -2) },
          ids: { shape: [3], data: Int32Array.of(7, 8, 9) },
          positions: { shape: [1, 2], data: BigInt64Array.of(0n, 1n) },
        },
        { metadata: { format: 'pt' } },
      ),
    )
    const file = await openSafetensors(path)
    try {
      expect(file.path).toBe(path)
      expect(file.metadata).toEqual({ format: 'pt' })
      expect(file.names).toEqual(['positions', 'embed', 'ids', 'brain', 'half'])
      expect(file.has('embed')).toBe(true)
      expect(file.has('missing')).toBe(false)
      expect(file.info('half')).toEqual({
        dtype: 'F16',
        shape: [half.length],
        elementCount: half.length,
        byteLength: half.length * 2,
        dataOffsets: [56, 56 + half.length * 2],
      })
      expect(await file.read('embed')).toEqual({ dtype: 'F32', shape: [2, 3], data: Float32Array.of(1, 2, 3, 4, 5, 6) })
      expect(await file.read('positions')).toEqual({ dtype: 'I64', shape: [1, 2], data: BigInt64Array.of(0n, 1n) })
      expect(await file.read('ids')).toEqual({ dtype: 'I32', shape: [3], data: Int32Array.of(7, 8, 9) })
      expect(await file.read('brain')).toEqual({ dtype: 'BF16', shape: [2], data: Float32Array.of(1.5, -2) })
      const readHalf = (await file.read('half')).data as Float32Array
      expect(readHalf.every((value, index) => value === half[index])).toBe(true)
      // Concurrent reads share the descriptor safely (positioned reads).
      const [first, second] = await Promise.all([file.read('ids'), file.read('embed')])
      expect([...first.data]).toEqual([7, 8, 9])
      expect([...second.data]).toEqual([1, 2, 3, 4, 5, 6])
      // info() hands out copies.
      file.info('embed').shape.push(99)
      expect(file.info('embed').shape).toEqual([2, 3])
    } finally {
      await file.close()
    }
  })

  it('names unknown tensors, and refuses reads after close', async () => {
    const path = join(directory, 'small.safetensors')
    await writeFile(path, serializeSafetensors({ a: { shape: [1], data: Float32Array.of(1) } }))
    const file = await openSafetensors(path)
    expect(() => file.info('b')).toThrow(InvalidArgumentError)
    expect(() => file.info('b')).toThrow(/holds no tensor of that name \(it holds "a"\)/)
    await file.close()
    await file.close() // twice is fine
    await expect(file.read('a')).rejects.toThrow(LudicError)
    await expect(file.read('a')).rejects.toThrow(/was closed/)
  })

  it('reports a file that shrank after it was opened as a ParseError naming the tensor', async () => {
    const path = join(directory, 'shrinking.safetensors')
    const bytes = serializeSafetensors({
      a: { shape: [4], data: new Float32Array(4) },
      b: { dtype: 'F16', shape: [4], data: new Float32Array(4) },
    })
    await writeFile(path, bytes)
    const file = await openSafetensors(path)
    try {
      await truncate(path, bytes.length - 2)
      const error = await file.read('b').catch((caught: unknown) => caught)
      expect(ParseError.isInstance(error)).toBe(true)
      expect((error as ParseError).path).toEqual(['data', 'b'])
      expect((error as ParseError).message).toMatch(new RegExp(`file ended at byte ${bytes.length - 2}.*changed after it was opened`))
    } finally {
      await file.close()
    }
  })

  it('refuses a directory and passes through a missing file', async () => {
    await expect(openSafetensors(directory)).rejects.toThrow(InvalidArgumentError)
    await expect(openSafetensors(join(directory, 'missing.safetensors'))).rejects.toThrow(/ENOENT/)
    await expect(openSafetensors('')).rejects.toThrow(InvalidArgumentError)
  })
})
