import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { ParseError } from '@ludic/core'
import * as tensors from '@ludic/tensors'
import { latestCheckpoint, listCheckpoints } from './list-checkpoints.js'
import { loadTrainingCheckpoint } from './load-training-checkpoint.js'
import { saveTrainingCheckpoint } from './save-training-checkpoint.js'
import { startMlpRun, trainMlp } from '../test/mlp-training.js'

// The checkpoint writer's safetensors writes go through this mock, so a test can fail or freeze one.
vi.mock('@ludic/tensors', async (importOriginal) => {
  const actual = await importOriginal<typeof import('@ludic/tensors')>()
  return { ...actual, writeSafetensorsFile: vi.fn(actual.writeSafetensorsFile) }
})
const writeSafetensorsFile = vi.mocked(tensors.writeSafetensorsFile)

let root: string
beforeAll(async () => {
  await tensors.initTensors({ backend: 'wasm', verbose: false })
  root = await mkdtemp(join(tmpdir(), 'ludic-checkpoint-crash-'))
})
afterAll(async () => {
  await rm(root, { recursive: true, force: true, maxRetries: 5 })
})

async function filesOf(directory: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>()
  for (const name of (await readdir(directory)).sort()) files.set(name, await readFile(join(directory, name)))
  return files
}

describe('a save that fails part-way', () => {
  it('leaves the previous checkpoint intact and no valid-looking partial one (error between two files)', async () => {
    const runDirectory = join(root, 'error')
    const run = startMlpRun(1, 2)
    trainMlp(run.parameters, run.optimizer, run.random, 0, 2)
    const contents = () => ({ parameters: run.parameters, optimizer: run.optimizer, randomState: run.random.getState() })
    const { path: previous } = await saveTrainingCheckpoint(runDirectory, { ...contents(), step: 2 })
    const previousFiles = await filesOf(previous)
    trainMlp(run.parameters, run.optimizer, run.random, 2, 4)

    // The weights are written, then writing the optimizer state fails.
    const real = writeSafetensorsFile.getMockImplementation()!
    writeSafetensorsFile.mockImplementationOnce(real).mockImplementationOnce(async () => {
      throw new Error('disk full')
    })
    await expect(saveTrainingCheckpoint(runDirectory, { ...contents(), step: 4 }, { keepLast: 1 })).rejects.toThrow('disk full')

    expect(await readdir(runDirectory)).toEqual(['checkpoint-2']) // no checkpoint-4, no temporary directory, nothing pruned
    expect(await latestCheckpoint(runDirectory)).toBe(previous)
    expect(await filesOf(previous)).toEqual(previousFiles)
    const loaded = await loadTrainingCheckpoint(previous, { parameters: run.parameters, optimizer: run.optimizer })
    expect(loaded.step).toBe(2)
    run.dispose()
  })

  it('leaves the previous checkpoint intact when the process dies mid-save, and the next save cleans up', async () => {
    const runDirectory = join(root, 'crash')
    const run = startMlpRun(1, 2)
    trainMlp(run.parameters, run.optimizer, run.random, 0, 1)
    const contents = () => ({ parameters: run.parameters, optimizer: run.optimizer, randomState: run.random.getState() })
    const { path: previous } = await saveTrainingCheckpoint(runDirectory, { ...contents(), step: 1 })
    const previousFiles = await filesOf(previous)
    trainMlp(run.parameters, run.optimizer, run.random, 1, 3)

    // "Dies" while writing the optimizer state: that write never finishes, so no cleanup code runs either.
    const real = writeSafetensorsFile.getMockImplementation()!
    let reachedOptimizer!: () => void
    const frozen = new Promise<void>((resolve) => (reachedOptimizer = resolve))
    writeSafetensorsFile.mockImplementationOnce(real).mockImplementationOnce(() => {
      reachedOptimizer()
      return new Promise<void>(() => {})
    })
    void saveTrainingCheckpoint(runDirectory, { ...contents(), step: 3 })
    await frozen

    const entries = (await readdir(runDirectory)).sort()
    expect(entries).toHaveLength(2)
    expect(entries[0]).toMatch(/^\.checkpoint-3\.\d+\.[0-9a-f]+\.tmp$/) // hidden, and lacking its state file
    expect(await readdir(join(runDirectory, entries[0]!))).toEqual(['model.safetensors'])
    expect(entries[1]).toBe('checkpoint-1')
    expect((await listCheckpoints(runDirectory)).map((entry) => entry.step)).toEqual([1])
    expect(await latestCheckpoint(runDirectory)).toBe(previous)
    expect(await filesOf(previous)).toEqual(previousFiles)
    await expect(loadTrainingCheckpoint(join(runDirectory, entries[0]!), { parameters: run.parameters })).rejects.toThrow(ParseError)

    // A restarted process resumes from the previous checkpoint and saves again.
    const loaded = await loadTrainingCheckpoint(previous, { parameters: run.parameters, optimizer: run.optimizer })
    expect(loaded.step).toBe(1)
    await saveTrainingCheckpoint(runDirectory, { ...contents(), step: 3 })
    expect((await readdir(runDirectory)).sort()).toEqual(['checkpoint-1', 'checkpoint-3'])
    run.dispose()
  })
})
