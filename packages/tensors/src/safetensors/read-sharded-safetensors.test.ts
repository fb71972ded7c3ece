import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError, LudicError, ParseError } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readShardedSafetensors } from './read-sharded-safetensors.js'
import { serializeSafetensors } from './serialize-safetensors.js'

describe('readShardedSafetensors', () => {
  let root: string
  let count = 0
  const folder = async (files: Record<string, string | Uint8Array>): Promise<string> => {
    const directory = join(root, `case-${count++}`)
    await mkdir(directory)
    for (const [name, content] of Object.entries(files)) await writeFile(join(directory, name), content)
    return directory
  }
  const shard = (tensors: Record<string, number[]>) =>
    serializeSafetensors(
      Object.fromEntries(Object.entries(tensors).map(([name, values]) => [name, { shape: [values.length], data: Float32Array.from(values) }])),
      { metadata: { format: 'pt' } },
    )

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'ludic-read-sharded-'))
  })
  afterAll(async () => {
    await rm(root, { recursive: true, force: true, maxRetries: 5 })
  })

  it('reads a single model.safetensors when there is no index', async () => {
    const directory = await folder({ 'model.safetensors': shard({ a: [1], b: [2, 3] }) })
    const checkpoint = await readShardedSafetensors(directory)
    try {
      expect(checkpoint.files).toEqual(['model.safetensors'])
      expect(checkpoint.names).toEqual(['a', 'b'])
      expect(checkpoint.metadata).toEqual({ format: 'pt' })
      expect(checkpoint.indexMetadata).toEqual({})
      expect(checkpoint.fileOf('b')).toBe('model.safetensors')
      expect([...(await checkpoint.read('b')).data]).toEqual([2, 3])
    } finally {
      await checkpoint.close()
    }
  })

  it('reads across shards through the index, with another prefix', async () => {
    const directory = await folder({
      'adapter-00001-of-00002.safetensors': shard({ a: [1], c: [5] }),
      'adapter-00002-of-00002.safetensors': shard({ b: [2, 3] }),
      'adapter.safetensors.index.json': JSON.stringify({
        metadata: { total_size: 16 },
        weight_map: { a: 'adapter-00001-of-00002.safetensors', b: 'adapter-00002-of-00002.safetensors' },
      }),
    })
    const checkpoint = await readShardedSafetensors(directory, { prefix: 'adapter' })
    try {
      expect(checkpoint.files).toEqual(['adapter-00001-of-00002.safetensors', 'adapter-00002-of-00002.safetensors'])
      expect(checkpoint.names).toEqual(['a', 'b']) // "c" is in a shard but not in the map: not exposed
      expect(checkpoint.has('c')).toBe(false)
      expect(checkpoint.indexMetadata).toEqual({ total_size: 16 })
      expect(checkpoint.info('b')).toMatchObject({ dtype: 'F32', shape: [2], byteLength: 8 })
      expect([...(await checkpoint.read('a')).data]).toEqual([1])
      expect([...(await checkpoint.read('b')).data]).toEqual([2, 3])
      expect(() => checkpoint.info('c')).toThrow(InvalidArgumentError)
    } finally {
      await checkpoint.close()
    }
    await expect(checkpoint.read('a')).rejects.toThrow(LudicError)
  })

  it('refuses a directory with neither an index nor model.safetensors', async () => {
    const directory = await folder({ 'other.safetensors': shard({ a: [1] }) })
    await expect(readShardedSafetensors(directory)).rejects.toThrow(InvalidArgumentError)
    await expect(readShardedSafetensors(directory)).rejects.toThrow(/holds neither model\.safetensors\.index\.json nor model\.safetensors/)
  })

  it.each<[string, Record<string, string | Uint8Array>, (string | number)[], RegExp]>([
    [
      'a shard that does not exist',
      { 'model.safetensors.index.json': '{"weight_map":{"a":"model-00001-of-00001.safetensors"}}' },
      ['weight_map', 'a'],
      /puts tensor "a" in model-00001-of-00001\.safetensors, which does not exist/,
    ],
    [
      'a tensor its shard lacks',
      {
        's.safetensors': shard({ a: [1] }),
        'model.safetensors.index.json': '{"weight_map":{"a":"s.safetensors","b":"s.safetensors"}}',
      },
      ['weight_map', 'b'],
      /puts tensor "b" in s\.safetensors, which holds no tensor of that name/,
    ],
    [
      'a shard outside the directory',
      { 'model.safetensors.index.json': '{"weight_map":{"a":"../s.safetensors"}}' },
      ['weight_map', 'a'],
      /file name of a shard in the same directory/,
    ],
    ['a broken index', { 'model.safetensors.index.json': '{"weight_map":' }, [], /not valid JSON/],
  ])('reports %s as a ParseError naming the tensor', async (_, files, path, message) => {
    const directory = await folder(files)
    const error = await readShardedSafetensors(directory).catch((caught: unknown) => caught)
    expect(ParseError.isInstance(error), String(error)).toBe(true)
    expect((error as ParseError).path).toEqual(path)
    expect((error as ParseError).message).toMatch(message)
    expect((error as ParseError).source).toBe(join(directory, 'model.safetensors.index.json'))
  })

  it('reports a corrupt shard as a ParseError from that shard', async () => {
    const good = shard({ a: [1, 2] })
    const directory = await folder({
      's1.safetensors': good,
      's2.safetensors': good.subarray(0, good.length - 1),
      'model.safetensors.index.json': '{"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}}',
    })
    const error = await readShardedSafetensors(directory).catch((caught: unknown) => caught)
    expect(ParseError.isInstance(error)).toBe(true)
    expect((error as ParseError).source).toBe(join(directory, 's2.safetensors'))
    expect((error as ParseError).path).toEqual(['header', 'a', 'data_offsets'])
  })
})
