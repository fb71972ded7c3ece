import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRandom, FileSystemError } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createModel } from '../model/create-model.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { saveTrainingCheckpoint } from '../training/save-training-checkpoint.js'
import { saveModel } from './save-model.js'

// A disk that is full under any folder named `full-disk`: writes through an open file fail as Node's do,
// with an error that names no file (`ENOSPC: no space left on device, write`).
vi.mock('node:fs/promises', async (importOriginal) => (await import('@ludic/core/test')).fullDiskFileSystem(await importOriginal()))

beforeAll(initTestBackend)

let directory: string
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ludic-model-full-disk-'))
  await mkdir(join(directory, 'full-disk'))
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

describe('saving on a full disk', () => {
  it('saveModel and saveTrainingCheckpoint name the file they were writing (FileSystemError, ENOSPC)', async () => {
    const model = createModel('tiny', { vocabSize: 32, seed: 1 })
    try {
      const folder = join(directory, 'full-disk', 'model')
      const saved = await saveModel(model, folder).catch((error: unknown) => error)
      expect(FileSystemError.isInstance(saved)).toBe(true)
      expect((saved as FileSystemError).message).toMatch(
        new RegExp(`^Cannot write ${folder}/[a-z_.]+\\.(json|safetensors): ENOSPC: no space left on device, write$`),
      )
      const run = join(directory, 'full-disk', 'run')
      const checkpoint = await saveTrainingCheckpoint(run, { parameters: model.parameters(), randomState: createRandom(0).getState(), step: 1 }).catch(
        (error: unknown) => error,
      )
      expect(checkpoint).toMatchObject({ name: 'FileSystemError', code: 'ENOSPC' })
      expect((checkpoint as FileSystemError).path.startsWith(run)).toBe(true)
      expect((await readdir(run)).filter((name) => name.startsWith('checkpoint-'))).toEqual([])
    } finally {
      model.dispose()
    }
  })
})
