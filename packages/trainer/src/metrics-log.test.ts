import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FileSystemError } from '@ludic/core'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { createMetricsLog } from './metrics-log.js'

// A disk that is full under any folder named `full-disk`: Node's error names no file. The setup file (the Node entry's
// registration, `node-platform.ts`) has already imported metrics-log with the real file system, and Vitest does not mock
// what a setup file imported: the module cache is cleared first, so this file imports metrics-log afresh, mocked.
vi.hoisted(() => vi.resetModules())
vi.mock('node:fs/promises', async (importOriginal) => (await import('@ludic/core/test')).fullDiskFileSystem(await importOriginal()))

const directory = await mkdtemp(join(tmpdir(), 'ludic-metrics-log-'))
afterAll(() => rm(directory, { recursive: true, force: true, maxRetries: 5 }))

describe('createMetricsLog', () => {
  it('appends, keeps steps up to a point (returning them), rewrites', async () => {
    const log = createMetricsLog(join(directory, 'run', 'metrics.jsonl'))
    for (const step of [1, 2, 3]) await log.append({ step, loss: step / 2 })
    expect(await log.truncateAfter(2)).toEqual([
      { step: 1, loss: 0.5 },
      { step: 2, loss: 1 },
    ])
    await log.rewrite([{ step: 1, loss: Number.NaN }])
    expect(await log.read()).toEqual([{ step: 1, loss: null }])
  })

  it('names the log when the disk is full (Node names no file)', async () => {
    const path = join(directory, 'full-disk', 'metrics.jsonl')
    const log = createMetricsLog(path)
    const error = await log.append({ step: 1, loss: 0 }).catch((caught: unknown) => caught)
    expect(FileSystemError.isInstance(error)).toBe(true)
    expect((error as FileSystemError).message).toBe(`Cannot write ${path}: ENOSPC: no space left on device, write`)
    await expect(log.rewrite([])).rejects.toThrow(path)
  })
})
