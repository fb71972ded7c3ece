import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FileSystemError } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { blobLockPath, markMissing, repoStorageFolder, writeRef } from './cache-layout.js'

// A disk that is full under any folder named `full-disk`: writeFile fails as Node's does, with no path in the error.
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>()
  return {
    ...actual,
    writeFile: async (...args: Parameters<typeof actual.writeFile>) => {
      if (String(args[0]).includes('full-disk'))
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' })
      return actual.writeFile(...args)
    },
  }
})

let directory: string
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ludic-hub-layout-'))
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

const commit = 'a'.repeat(40)

describe('the cache writers', () => {
  it('name the file they were writing when the disk is full (FileSystemError), and leave no temporary file behind', async () => {
    const storage = repoStorageFolder(join(directory, 'full-disk'), 'ludic/tiny')
    const missing = await markMissing(storage, commit, 'special_tokens_map.json').catch((error: unknown) => error)
    expect(FileSystemError.isInstance(missing)).toBe(true)
    expect((missing as FileSystemError).message).toBe(
      `Cannot write ${join(storage, '.no_exist', commit, 'special_tokens_map.json')}: ENOSPC: no space left on device, write`,
    )
    const ref = await writeRef(storage, 'main', commit).catch((error: unknown) => error)
    expect(ref).toMatchObject({ name: 'FileSystemError', code: 'ENOSPC', path: join(storage, 'refs', 'main') })
    expect(await readdir(join(storage, 'refs'))).toEqual([])
  })

  it("put the blob lock where Python's huggingface_hub puts it: <cache>/.locks/models--owner--name/<etag>.lock", () => {
    expect(blobLockPath(repoStorageFolder('/cache', 'owner/name'), 'abc')).toBe('/cache/.locks/models--owner--name/abc.lock')
  })
})
