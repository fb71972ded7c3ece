import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FileSystemError } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { writeJsonFileAtomically } from './write-file-atomically.js'
import { writeSafetensorsFile } from './write-safetensors-file.js'
import { writeShardedSafetensors } from './write-sharded-safetensors.js'

// A disk that is full under any folder named `full-disk`: writes through an open file fail as Node's do,
// with an error that names no file (`ENOSPC: no space left on device, write`).
vi.mock('node:fs/promises', async (importOriginal) => (await import('@ludic/core/test')).fullDiskFileSystem(await importOriginal()))

let directory: string
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ludic-full-disk-'))
  await mkdir(join(directory, 'full-disk'))
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

const tensors = { weight: { shape: [4], data: Float32Array.of(1, 2, 3, 4) } }

describe('the safetensors and JSON writers on a full disk', () => {
  it('name the file they were writing (FileSystemError with code ENOSPC) and leave no temporary file', async () => {
    const folder = join(directory, 'full-disk')
    const file = join(folder, 'model.safetensors')
    const single = await writeSafetensorsFile(file, tensors).catch((error: unknown) => error)
    expect(FileSystemError.isInstance(single)).toBe(true)
    expect((single as FileSystemError).message).toBe(`Cannot write ${file}: ENOSPC: no space left on device, write`)
    expect(single).toMatchObject({ code: 'ENOSPC', path: file, operation: 'write' })
    await expect(writeJsonFileAtomically(join(folder, 'config.json'), { a: 1 })).rejects.toMatchObject({
      name: 'FileSystemError',
      path: join(folder, 'config.json'),
      code: 'ENOSPC',
    })
    await expect(writeShardedSafetensors(join(folder, 'sharded'), tensors)).rejects.toMatchObject({
      name: 'FileSystemError',
      path: join(folder, 'sharded', 'model.safetensors'),
    })
    expect(await readdir(folder)).toEqual(['sharded'])
    expect(await readdir(join(folder, 'sharded'))).toEqual([])
  })
})
