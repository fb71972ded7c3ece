import { randomBytes } from 'node:crypto'
import { mkdir, readdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { createRandom, InvalidArgumentError, parseArgument } from '@ludic/core'
import { syncDirectory, writeJsonFileAtomically, writeSafetensorsFile } from '@ludic/tensors'
import { z } from 'zod'
import type { AdamW } from './adamw.js'
import { listCheckpoints } from './list-checkpoints.js'
import { checkpointDirectoryName, checkpointFileNames, checkpointFormat, temporaryEntryPattern, type TrainingStateFile } from './training-checkpoint-format.js'

export const saveTrainingCheckpointOptionsSchema = z.strictObject({
  /**
   * Keep only the newest `keepLast` checkpoints of the run directory (by step), removing older ones
   * after the new one is in place (Hugging Face `save_total_limit`). Default: keep all.
   */
  keepLast: z.number().int().positive().optional(),
})
export type SaveTrainingCheckpointOptions = z.input<typeof saveTrainingCheckpointOptionsSchema>

/** What a training checkpoint holds. */
export interface TrainingCheckpointContents {
  /** The parameters by (Hugging Face) name, e.g. `model.parameters()`. */
  parameters: ReadonlyMap<string, tf.Tensor>
  /** Optimizer whose state (step, moments) is saved. Optional: without it only weights, step and RNG. */
  optimizer?: AdamW
  /** `random.getState()` of the generator that drives data order, sampling, dropout… */
  randomState: Uint32Array
  /** The training step this checkpoint is taken after; names the directory `checkpoint-<step>`. */
  step: number
  /** Any JSON the run needs to resume (data position, metrics, configuration). Default `{}`. */
  extra?: z.core.util.JSONType
}

const contentsSchema = z.strictObject({
  parameters: z.instanceof(Map, { message: 'must be a Map from names to tensors' }),
  optimizer: z
    .custom<AdamW>((value) => typeof value === 'object' && value !== null && 'exportState' in value, 'must be an optimizer from createAdamW')
    .optional(),
  randomState: z.instanceof(Uint32Array, { message: 'must be a Uint32Array from Random.getState()' }),
  step: z.number().int().nonnegative(),
  extra: z.json().default({}),
})

/**
 * Saves a training checkpoint as `<runDirectory>/checkpoint-<step>/` (layout in
 * `training-checkpoint-format.ts`) and returns its path.
 *
 * Crash-safe at two levels: every file is written to a temporary file, fsynced and renamed; the whole
 * checkpoint is written into a hidden temporary directory, fsynced, then renamed to `checkpoint-<step>`
 * (replacing one of the same step), and the run directory is fsynced. So a crash at any point leaves
 * either no `checkpoint-<step>` or a complete one, and never touches earlier checkpoints. On an error
 * the temporary directory is removed; leftovers of a crashed process (hidden `.checkpoint-*.tmp`
 * entries) are removed by the next save, so one process should write a run directory at a time.
 */
export async function saveTrainingCheckpoint(
  runDirectory: string,
  contents: TrainingCheckpointContents,
  options: SaveTrainingCheckpointOptions = {},
): Promise<{ path: string }> {
  const directory = parseArgument(z.string().min(1), runDirectory, 'runDirectory')
  const parsed = parseArgument(contentsSchema, contents, 'contents')
  const { keepLast } = parseArgument(saveTrainingCheckpointOptionsSchema, options, 'options')
  try {
    createRandom({ state: parsed.randomState })
  } catch (error) {
    throw new InvalidArgumentError({ argument: 'contents.randomState', value: parsed.randomState, message: 'is not a generator state', cause: error })
  }
  const parameters = await readParameters(parsed.parameters as Map<unknown, unknown>)
  const optimizerState = parsed.optimizer === undefined ? undefined : await parsed.optimizer.exportState()
  const state: TrainingStateFile = {
    format: checkpointFormat,
    version: 1,
    step: parsed.step,
    randomState: [...parsed.randomState],
    optimizer:
      parsed.optimizer === undefined || optimizerState === undefined
        ? null
        : {
            name: 'adamw',
            step: optimizerState.step,
            hyperparameters: {
              ...parsed.optimizer.hyperparameters,
              excludeFromWeightDecay: parsed.optimizer.hyperparameters.excludeFromWeightDecay.map(String),
            },
          },
    extra: parsed.extra,
  }

  await mkdir(directory, { recursive: true })
  await removeLeftovers(directory)
  const finalPath = join(directory, checkpointDirectoryName(parsed.step))
  const temporaryPath = join(directory, `.${checkpointDirectoryName(parsed.step)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`)
  await mkdir(temporaryPath)
  try {
    await writeSafetensorsFile(join(temporaryPath, checkpointFileNames.weights), parameters, { metadata: { format: 'pt' } })
    if (optimizerState !== undefined) {
      await writeSafetensorsFile(join(temporaryPath, checkpointFileNames.optimizer), optimizerState.tensors, {
        metadata: { step: String(optimizerState.step) },
      })
    }
    await writeJsonFileAtomically(join(temporaryPath, checkpointFileNames.state), state)
    await syncDirectory(temporaryPath)
    await moveIntoPlace(temporaryPath, finalPath)
  } catch (error) {
    await rm(temporaryPath, { recursive: true, force: true })
    throw error
  }
  await syncDirectory(directory)
  if (keepLast !== undefined) await removeOldCheckpoints(directory, keepLast)
  return { path: finalPath }
}

async function readParameters(parameters: Map<unknown, unknown>): Promise<Map<string, { shape: number[]; data: Float32Array }>> {
  const tensors = new Map<string, { shape: number[]; data: Float32Array }>()
  for (const [name, tensor] of parameters) {
    if (typeof name !== 'string' || !(tensor instanceof tf.Tensor) || tensor.isDisposed || tensor.dtype !== 'float32') {
      throw new InvalidArgumentError({
        argument: `contents.parameters[${JSON.stringify(String(name))}]`,
        value: tensor instanceof tf.Tensor ? `${tensor.dtype} tensor${tensor.isDisposed ? ' (disposed)' : ''}` : tensor,
        message: 'parameters must be live float32 tensors under string names',
      })
    }
    tensors.set(name, { shape: [...tensor.shape], data: Float32Array.from(await tensor.data()) })
  }
  return tensors
}

/** Renames the finished temporary directory to its final name, replacing a checkpoint of the same step. */
async function moveIntoPlace(temporaryPath: string, finalPath: string): Promise<void> {
  try {
    await rename(temporaryPath, finalPath)
    return
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error
  }
  // A checkpoint of this step exists: move it aside (still complete, under a hidden name), then replace it.
  const oldPath = `${temporaryPath.slice(0, -'.tmp'.length)}.old`
  await rename(finalPath, oldPath)
  await rename(temporaryPath, finalPath)
  await rm(oldPath, { recursive: true, force: true })
}

/**
 * Removes the oldest checkpoints beyond `keepLast`: each is first renamed to a hidden name, so a crash mid-removal
 * never leaves a partial `checkpoint-<step>`.
 */
async function removeOldCheckpoints(directory: string, keepLast: number): Promise<void> {
  const checkpoints = await listCheckpoints(directory)
  for (const checkpoint of checkpoints.slice(0, Math.max(0, checkpoints.length - keepLast))) {
    const hiddenPath = join(directory, `.${checkpointDirectoryName(checkpoint.step)}.${process.pid}.${randomBytes(6).toString('hex')}.old`)
    await rename(checkpoint.path, hiddenPath)
    await rm(hiddenPath, { recursive: true, force: true })
  }
}

/** Hidden temporary entries a crashed save or removal left behind. */
async function removeLeftovers(directory: string): Promise<void> {
  for (const name of await readdir(directory)) {
    if (temporaryEntryPattern.test(name)) await rm(join(directory, name), { recursive: true, force: true })
  }
}
