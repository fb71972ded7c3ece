import { z } from 'zod'

/**
 * The on-disk layout of a training checkpoint: `<run directory>/checkpoint-<step>/` holding
 *
 * - `model.safetensors`: the parameters, F32, under their own (Hugging Face) names;
 * - `optimizer.safetensors`: the optimizer moments `${parameter}.exp_avg` / `${parameter}.exp_avg_sq`
 *   (only when an optimizer was saved), with the step in the metadata;
 * - `training-state.json`: step, random-generator state, optimizer step and hyperparameters, `extra`.
 *
 * The directory is written under a hidden temporary name and renamed into place whole, so a
 * `checkpoint-<step>` directory is always complete.
 */
export const checkpointFileNames = {
  weights: 'model.safetensors',
  optimizer: 'optimizer.safetensors',
  state: 'training-state.json',
} as const

export const checkpointFormat = 'ludic-training-checkpoint'

/** `checkpoint-<step>`, as Hugging Face's Trainer names them. */
export function checkpointDirectoryName(step: number): string {
  return `checkpoint-${step}`
}

/** The step of a `checkpoint-<step>` directory name, or undefined for any other name. */
export function stepOfCheckpointDirectory(name: string): number | undefined {
  const match = /^checkpoint-(0|[1-9]\d*)$/.exec(name)
  if (match === null) return undefined
  const step = Number(match[1])
  return Number.isSafeInteger(step) ? step : undefined
}

/** Names of unfinished work in a run directory: a checkpoint being written, or one being replaced or removed. */
export const temporaryEntryPattern = /^\.checkpoint-\d+\.[\w.-]+\.(tmp|old)$/

const uint32Schema = z.number().int().min(0).max(0xffffffff)

export const trainingStateFileSchema = z.strictObject({
  format: z.literal(checkpointFormat),
  version: z.literal(1),
  /** The caller's training step (also in the directory name). */
  step: z.number().int().nonnegative(),
  /** `Random.getState()`: four 32-bit words. */
  randomState: z.array(uint32Schema).length(4),
  /** Present when optimizer state was saved. */
  optimizer: z
    .strictObject({
      name: z.literal('adamw'),
      step: z.number().int().nonnegative(),
      hyperparameters: z.strictObject({
        learningRate: z.number(),
        beta1: z.number(),
        beta2: z.number(),
        epsilon: z.number(),
        weightDecay: z.number(),
        decoupled: z.boolean(),
        excludeFromWeightDecay: z.array(z.string()),
      }),
    })
    .nullable(),
  /** The caller's JSON (data position, metrics, configuration…). */
  extra: z.json(),
})
export type TrainingStateFile = z.output<typeof trainingStateFileSchema>
