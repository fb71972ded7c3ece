import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serializeSafetensors } from './serialize-safetensors.js'
import type { SafetensorsTensorInput } from './safetensors-tensor.js'
import { writeSafetensorsFile } from './write-safetensors-file.js'

describe('writeSafetensorsFile', () => {
  let directory: string
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'ludic-write-safetensors-'))
  })
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true, maxRetries: 5 })
  })

  it('streams the same bytes serializeSafetensors builds, over several chunks', async () => {
    const big = new Float32Array((1 << 22) + 7).map((_, index) => Math.sin(index)) // 16 MiB + 28 bytes of F32
    const tensors: Record<string, SafetensorsTensorInput> = {
      big: { shape: [big.length], data: big },
      half: { dtype: 'F16', shape: [(1 << 19) + 1], data: big.subarray(0, (1 << 19) + 1) },
      ids: { shape: [2], data: Int32Array.of(1, 2) },
      positions: { shape: [2], data: BigInt64Array.of(3n, 4n) },
    }
    const path = join(directory, 'model.safetensors')
    await writeSafetensorsFile(path, tensors, { metadata: { format: 'pt' } })
    const written = await readFile(path)
    const expected = serializeSafetensors(tensors, { metadata: { format: 'pt' } })
    expect(written.length).toBe(expected.length)
    expect(Buffer.compare(written, expected)).toBe(0)
    expect(await readdir(directory)).toEqual(['model.safetensors'])
  })

  it('validates before touching the file', async () => {
    const path = join(directory, 'kept.safetensors')
    await writeFile(path, 'previous checkpoint')
    await expect(writeSafetensorsFile(path, { w: { shape: [3], data: new Float32Array(2) } })).rejects.toThrow(InvalidArgumentError)
    await expect(writeSafetensorsFile(path, { w: { shape: [3], data: new Float32Array(2) } })).rejects.toThrow(/tensors\["w"\]\.shape/)
    expect(await readFile(path, 'utf8')).toBe('previous checkpoint')
    expect((await readdir(directory)).filter((name) => name.endsWith('.tmp'))).toEqual([])
  })
})
