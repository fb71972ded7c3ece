import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readShardedSafetensors } from './read-sharded-safetensors.js'
import type { SafetensorsTensorInput } from './safetensors-tensor.js'
import { writeShardedSafetensors } from './write-sharded-safetensors.js'

const vector = (length: number, start = 0) => ({
  shape: [length],
  data: new Float32Array(length).map((_, index) => start + index),
})

describe('writeShardedSafetensors', () => {
  let root: string
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'ludic-write-sharded-'))
  })
  afterAll(async () => {
    await rm(root, { recursive: true, force: true, maxRetries: 5 })
  })

  it('splits as transformers does and reads back through the index', async () => {
    const directory = join(root, 'sharded')
    const tensors = new Map<string, SafetensorsTensorInput>([
      ['embed', vector(10)], // 40 bytes: opens a shard
      ['huge', vector(30, 100)], // 120 bytes > 64: a shard of its own, listed before the open one
      ['layer.0', vector(6, 200)], // 24: 40 + 24 = 64 still fits with "embed"
      ['layer.1', { dtype: 'F16', shape: [8], data: new Float32Array(8).fill(0.5) }], // 16: 80 > 64, new shard
      ['ids', { shape: [4], data: BigInt64Array.of(1n, 2n, 3n, 4n) }], // 32: 16 + 32 fits
    ])
    const result = await writeShardedSafetensors(directory, tensors, { maxShardBytes: 64 })
    expect(result).toEqual({
      files: ['model-00001-of-00003.safetensors', 'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors'],
      indexFile: 'model.safetensors.index.json',
      totalSize: 40 + 120 + 24 + 16 + 32,
      totalParameters: 10 + 30 + 6 + 8 + 4,
    })
    const index = JSON.parse(await readFile(join(directory, 'model.safetensors.index.json'), 'utf8'))
    expect(index).toEqual({
      metadata: { total_parameters: 58, total_size: 232 },
      weight_map: {
        embed: 'model-00002-of-00003.safetensors',
        huge: 'model-00001-of-00003.safetensors',
        ids: 'model-00003-of-00003.safetensors',
        'layer.0': 'model-00002-of-00003.safetensors',
        'layer.1': 'model-00003-of-00003.safetensors',
      },
    })

    const checkpoint = await readShardedSafetensors(directory)
    try {
      expect(checkpoint.metadata).toEqual({ format: 'pt' })
      expect([...(await checkpoint.read('huge')).data]).toEqual(Array.from(vector(30, 100).data))
      expect(await checkpoint.read('layer.1')).toEqual({ dtype: 'F16', shape: [8], data: new Float32Array(8).fill(0.5) })
      expect([...(await checkpoint.read('ids')).data]).toEqual([1n, 2n, 3n, 4n])
    } finally {
      await checkpoint.close()
    }
  })

  it('writes a single model.safetensors when everything fits, and removes the earlier save’s shards', async () => {
    const directory = join(root, 'resave')
    await writeShardedSafetensors(directory, { a: vector(8), b: vector(8) }, { maxShardBytes: 40 })
    expect((await readdir(directory)).sort()).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json'])
    await writeFile(join(directory, 'config.json'), '{}')
    const result = await writeShardedSafetensors(directory, { a: vector(8), b: vector(8) }, { metadata: {} })
    expect(result).toEqual({ files: ['model.safetensors'], indexFile: undefined, totalSize: 64, totalParameters: 16 })
    expect((await readdir(directory)).sort()).toEqual(['config.json', 'model.safetensors'])
    const checkpoint = await readShardedSafetensors(directory)
    expect(checkpoint.metadata).toEqual({})
    expect(checkpoint.names).toEqual(['a', 'b'])
    await checkpoint.close()

    // And back to shards: the single file goes.
    await writeShardedSafetensors(directory, { a: vector(8), b: vector(8) }, { maxShardBytes: 32 })
    expect((await readdir(directory)).sort()).toEqual([
      'config.json',
      'model-00001-of-00002.safetensors',
      'model-00002-of-00002.safetensors',
      'model.safetensors.index.json',
    ])
  })

  it('validates options and tensors before writing anything', async () => {
    const directory = join(root, 'invalid')
    await expect(writeShardedSafetensors(directory, { a: vector(1) }, { maxShardBytes: 0 })).rejects.toThrow(/options\.maxShardBytes/)
    await expect(writeShardedSafetensors(directory, { a: vector(1) }, { prefix: '../model' })).rejects.toThrow(/options\.prefix/)
    await expect(writeShardedSafetensors(directory, { a: { shape: [2], data: new Float32Array(1) } })).rejects.toThrow(InvalidArgumentError)
    await expect(writeShardedSafetensors(directory, { a: vector(1) }, { metadata: { step: 3 } as never })).rejects.toThrow(/metadata\["step"\]/)
    await expect(readdir(directory)).rejects.toThrow(/ENOENT/)
  })
})
