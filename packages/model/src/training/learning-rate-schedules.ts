import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { z } from 'zod'

/**
 * Learning-rate schedules as plain functions `step → multiplier` of the base learning rate, exactly as
 * `transformers.optimization` computes them (`LambdaLR` lambdas). `step` counts optimizer steps taken
 * so far, from 0: the multiplier for the first update is `schedule(0)` (transformers calls
 * `optimizer.step()` then `scheduler.step()`), so with warm-up the first update has learning rate 0.
 *
 * ```ts
 * const schedule = warmupCosineSchedule({ warmupSteps: 100, totalSteps: 1000, minRatio: 0.1 })
 * optimizer.step(gradients, { learningRate: baseLearningRate * schedule(step) })
 * ```
 */
export type LearningRateSchedule = (step: number) => number

const stepCountSchema = z.number().int().nonnegative()

export const warmupCosineScheduleOptionsSchema = z.strictObject({
  /** Steps of linear warm-up from 0 to 1 (transformers `num_warmup_steps`). Default 0. */
  warmupSteps: stepCountSchema.default(0),
  /** Total optimizer steps (transformers `num_training_steps`); the cosine reaches its end here. */
  totalSteps: z.number().int().positive(),
  /**
   * Floor of the multiplier as a fraction of the base rate (transformers `min_lr_rate` of
   * `get_cosine_with_min_lr_schedule_with_warmup`). Default 0: `get_cosine_schedule_with_warmup`.
   */
  minRatio: z.number().min(0).max(1).default(0),
  /** Waves of the cosine over the decay (transformers `num_cycles`). Default 0.5: one half-cosine from 1 to `minRatio`. */
  cycles: z.number().positive().finite().default(0.5),
})
export type WarmupCosineScheduleOptions = z.input<typeof warmupCosineScheduleOptionsSchema>

/**
 * Linear warm-up, then cosine decay to `minRatio`: transformers `get_cosine_schedule_with_warmup`
 * (`minRatio` 0) and `get_cosine_with_min_lr_schedule_with_warmup(min_lr_rate = minRatio)`.
 * Past `totalSteps` the cosine keeps going, as there (never below 0).
 */
export function warmupCosineSchedule(options: WarmupCosineScheduleOptions): LearningRateSchedule {
  const { warmupSteps, totalSteps, minRatio, cycles } = parseArgument(warmupCosineScheduleOptionsSchema, options, 'options')
  return (step) => {
    checkStep(step)
    if (step < warmupSteps) return step / Math.max(1, warmupSteps)
    const progress = (step - warmupSteps) / Math.max(1, totalSteps - warmupSteps)
    const factor = 0.5 * (1 + Math.cos(Math.PI * cycles * 2 * progress))
    return Math.max(0, factor * (1 - minRatio) + minRatio)
  }
}

export const warmupLinearScheduleOptionsSchema = z.strictObject({
  /** Steps of linear warm-up from 0 to 1 (transformers `num_warmup_steps`). Default 0. */
  warmupSteps: stepCountSchema.default(0),
  /** Total optimizer steps (transformers `num_training_steps`): the multiplier reaches 0 here. */
  totalSteps: z.number().int().positive(),
})
export type WarmupLinearScheduleOptions = z.input<typeof warmupLinearScheduleOptionsSchema>

/** Linear warm-up, then linear decay to 0 at `totalSteps`: transformers `get_linear_schedule_with_warmup`. */
export function warmupLinearSchedule(options: WarmupLinearScheduleOptions): LearningRateSchedule {
  const { warmupSteps, totalSteps } = parseArgument(warmupLinearScheduleOptionsSchema, options, 'options')
  return (step) => {
    checkStep(step)
    if (step < warmupSteps) return step / Math.max(1, warmupSteps)
    return Math.max(0, (totalSteps - step) / Math.max(1, totalSteps - warmupSteps))
  }
}

export const constantScheduleOptionsSchema = z.strictObject({
  /** Steps of linear warm-up from 0 to 1 (transformers `num_warmup_steps`). Default 0: no warm-up. */
  warmupSteps: stepCountSchema.default(0),
})
export type ConstantScheduleOptions = z.input<typeof constantScheduleOptionsSchema>

/**
 * A constant multiplier 1, after an optional linear warm-up: transformers `get_constant_schedule`
 * (`warmupSteps` 0) and `get_constant_schedule_with_warmup`.
 */
export function constantSchedule(options: ConstantScheduleOptions = {}): LearningRateSchedule {
  const { warmupSteps } = parseArgument(constantScheduleOptionsSchema, options, 'options')
  return (step) => {
    checkStep(step)
    if (step < warmupSteps) return step / Math.max(1, warmupSteps)
    return 1
  }
}

function checkStep(step: number): void {
  if (!Number.isSafeInteger(step) || step < 0) {
    throw new InvalidArgumentError({ argument: 'step', value: step, message: 'must be a non-negative integer (optimizer steps taken so far)' })
  }
}
