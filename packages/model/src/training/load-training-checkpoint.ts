import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { createRandom, InvalidArgumentError, ParseError, parseArgument, parseInput, type Random } from '@ludic/core'
import { openSafetensors, type SafetensorsFile } from '@ludic/tensors'
import { z } from 'zod'
import type { AdamW, AdamWState } from './adamw.js'
import { checkpointFileNames, trainingStateFileSchema } from './training-checkpoint-format.js'

/** What `loadTrainingCheckpoint` restores into. */
export interface TrainingCheckpointTargets {
  /** Assigned in place; must match the checkpoint's weights exactly (names and shapes). */
  parameters: ReadonlyMap<string, tf.Variable>
  /** Its state is replaced by the checkpoint's (which must have one). Omit to load weights only. */
  optimizer?: AdamW
}

export interface LoadedTrainingCheckpoint {
  path: string
  /** The training step the checkpoint was taken after: resume at `step + 1`'s work. */
  step: number
  /** The saved generator state, and a generator in that state. */
  randomState: Uint32Array
  random: Random
  /** The optimizer's step count, or null when the checkpoint holds no optimizer state. */
  optimizerStep: number | null
  extra: z.core.util.JSONType
}

const targetsSchema = z.strictObject({
  parameters: z.instanceof(Map, { message: 'must be a Map from names to tf.Variable' }),
  optimizer: z
    .custom<AdamW>((value) => typeof value === 'object' && value !== null && 'importState' in value, 'must be an optimizer from createAdamW')
    .optional(),
})

/**
 * Loads a checkpoint written by `saveTrainingCheckpoint` (a `checkpoint-<step>` directory, e.g. from
 * `latestCheckpoint`): assigns the parameters in place, replaces the optimizer's state, and returns the
 * step, the generator state and `extra`.
 *
 * Everything is read and checked before anything changes: a missing file, malformed JSON, a missing,
 * unexpected, non-float or misshaped tensor is a `ParseError` naming the file and the tensors.
 */
export async function loadTrainingCheckpoint(checkpointDirectory: string, targets: TrainingCheckpointTargets): Promise<LoadedTrainingCheckpoint> {
  const directory = parseArgument(z.string().min(1), checkpointDirectory, 'checkpointDirectory')
  const { parameters, optimizer } = parseArgument(targetsSchema, targets, 'targets')
  const shapes = new Map<string, readonly number[]>()
  for (const [name, parameter] of parameters as Map<unknown, unknown>) {
    if (typeof name !== 'string' || !(parameter instanceof tf.Variable) || parameter.isDisposed || parameter.dtype !== 'float32') {
      throw new InvalidArgumentError({
        argument: `targets.parameters[${JSON.stringify(String(name))}]`,
        value: parameter,
        message: 'parameters must be live float32 tf.Variable under string names',
      })
    }
    shapes.set(name, parameter.shape)
  }

  const statePath = join(directory, checkpointFileNames.state)
  const state = await readStateFile(statePath)
  let random: Random
  try {
    random = createRandom({ state: state.randomState })
  } catch (error) {
    throw new ParseError({ source: statePath, path: ['randomState'], message: 'is not a generator state', cause: error })
  }

  const weights = await readTensors(join(directory, checkpointFileNames.weights), shapes)
  let optimizerState: AdamWState | undefined
  if (optimizer !== undefined) {
    const optimizerPath = join(directory, checkpointFileNames.optimizer)
    if (state.optimizer === null) {
      throw new ParseError({
        source: statePath,
        path: ['optimizer'],
        message: 'the checkpoint holds no optimizer state, but an optimizer was given to restore',
      })
    }
    const momentShapes = new Map<string, readonly number[]>()
    for (const name of optimizer.parameterNames) {
      const shape = shapes.get(name)
      if (shape === undefined) {
        throw new InvalidArgumentError({ argument: 'targets.optimizer', value: name, message: 'optimizes a parameter that is not in targets.parameters' })
      }
      momentShapes.set(`${name}.exp_avg`, shape)
      momentShapes.set(`${name}.exp_avg_sq`, shape)
    }
    const { tensors, metadata } = await readTensorsWithMetadata(optimizerPath, momentShapes)
    if (metadata.step !== String(state.optimizer.step)) {
      throw new ParseError({
        source: optimizerPath,
        path: ['__metadata__', 'step'],
        message: `is ${JSON.stringify(metadata.step)}, but ${checkpointFileNames.state} says optimizer step ${state.optimizer.step}`,
      })
    }
    optimizerState = { step: state.optimizer.step, tensors }
  }

  // Everything is read and valid: now change the targets.
  for (const [name, parameter] of parameters as Map<string, tf.Variable>) {
    const { shape, data } = weights.get(name)!
    tf.tidy(() => parameter.assign(tf.tensor(data, shape, 'float32')))
  }
  if (optimizer !== undefined && optimizerState !== undefined) optimizer.importState(optimizerState)
  return {
    path: directory,
    step: state.step,
    randomState: Uint32Array.from(state.randomState),
    random,
    optimizerStep: state.optimizer?.step ?? null,
    extra: state.extra,
  }
}

async function readStateFile(path: string): Promise<z.output<typeof trainingStateFileSchema>> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    throw new ParseError({
      source: path,
      message: `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}): not a complete training checkpoint`,
      cause: error,
    })
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new ParseError({ source: path, message: `is not JSON: ${(error as Error).message}`, cause: error })
  }
  return parseInput(trainingStateFileSchema, json, { source: path })
}

async function readTensors(path: string, shapes: ReadonlyMap<string, readonly number[]>): Promise<Map<string, { shape: number[]; data: Float32Array }>> {
  return (await readTensorsWithMetadata(path, shapes)).tensors
}

/** Reads exactly the tensors of `shapes` from a safetensors file, as float32, after checking names, dtypes and shapes. */
async function readTensorsWithMetadata(
  path: string,
  shapes: ReadonlyMap<string, readonly number[]>,
): Promise<{ tensors: Map<string, { shape: number[]; data: Float32Array }>; metadata: Readonly<Record<string, string>> }> {
  let file: SafetensorsFile
  try {
    file = await openSafetensors(path)
  } catch (error) {
    if (ParseError.isInstance(error)) throw error
    throw new ParseError({ source: path, message: `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`, cause: error })
  }
  try {
    const missing = [...shapes.keys()].filter((name) => !file.has(name))
    const unexpected = file.names.filter((name) => !shapes.has(name))
    const wrong: string[] = []
    for (const [name, shape] of shapes) {
      if (!file.has(name)) continue
      const info = file.info(name)
      if (info.dtype !== 'F32' && info.dtype !== 'F16' && info.dtype !== 'BF16') wrong.push(`${name} (dtype ${info.dtype}, expected F32)`)
      else if (!tf.util.arraysEqual(info.shape, [...shape])) wrong.push(`${name} (shape [${info.shape.join(', ')}], expected [${shape.join(', ')}])`)
    }
    if (missing.length + unexpected.length + wrong.length > 0) {
      const problems = [
        missing.length > 0 ? `missing tensors ${missing.join(', ')}` : '',
        wrong.length > 0 ? `misshaped tensors ${wrong.join(', ')}` : '',
        unexpected.length > 0 ? `unexpected tensors ${unexpected.join(', ')}` : '',
      ].filter((problem) => problem !== '')
      const first = missing[0] ?? wrong[0]?.split(' ')[0] ?? unexpected[0]!
      throw new ParseError({ source: path, path: [first], message: `does not match the model: ${problems.join('; ')}` })
    }
    const tensors = new Map<string, { shape: number[]; data: Float32Array }>()
    for (const name of shapes.keys()) {
      const tensor = await file.read(name)
      tensors.set(name, { shape: tensor.shape, data: tensor.data as Float32Array })
    }
    return { tensors, metadata: file.metadata }
  } finally {
    await file.close()
  }
}
