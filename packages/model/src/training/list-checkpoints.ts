import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgument } from '@ludic/core'
import { z } from 'zod'
import { checkpointFileNames, stepOfCheckpointDirectory } from './training-checkpoint-format.js'

export interface CheckpointEntry {
  step: number
  path: string
}

/**
 * The checkpoints of a run directory, oldest first: the `checkpoint-<step>` directories that hold a
 * `training-state.json` (written last, and the directory renamed into place whole, so these are
 * complete). Hidden temporary directories of unfinished saves are never listed. A missing run directory
 * has none.
 */
export async function listCheckpoints(runDirectory: string): Promise<CheckpointEntry[]> {
  const directory = parseArgument(z.string().min(1), runDirectory, 'runDirectory')
  let names: string[]
  try {
    names = await readdir(directory)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw error
  }
  const checkpoints: CheckpointEntry[] = []
  for (const name of names) {
    const step = stepOfCheckpointDirectory(name)
    if (step === undefined) continue
    const path = join(directory, name)
    const isComplete = await stat(join(path, checkpointFileNames.state)).then(
      (stats) => stats.isFile(),
      () => false,
    )
    if (isComplete) checkpoints.push({ step, path })
  }
  return checkpoints.sort((a, b) => a.step - b.step)
}

/** The path of the newest checkpoint (highest step) of a run directory, or undefined when it has none. */
export async function latestCheckpoint(runDirectory: string): Promise<string | undefined> {
  return (await listCheckpoints(runDirectory)).at(-1)?.path
}
