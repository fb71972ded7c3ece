import { constantSchedule, warmupCosineSchedule, warmupLinearSchedule, type LearningRateSchedule } from '@ludic/model'
import { z } from 'zod'

/** A learning-rate schedule by name (JSON-friendly): multiplier of the base rate at each update. */
export const scheduleConfigSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('constant'), warmupSteps: z.number().int().min(0).default(0) }),
  z.strictObject({
    type: z.literal('warmup-cosine'),
    warmupSteps: z.number().int().min(0).default(0),
    /** Steps at the full rate between the warm-up and the decay (warmup-stable-decay). Default 0. */
    holdSteps: z.number().int().min(0).default(0),
    /** The decay ends here (at `minRatio`), counted from step 0. */
    totalSteps: z.number().int().positive(),
    minRatio: z.number().min(0).max(1).default(0),
  }),
  z.strictObject({ type: z.literal('warmup-linear'), warmupSteps: z.number().int().min(0).default(0), totalSteps: z.number().int().positive() }),
])
export type ScheduleConfig = z.input<typeof scheduleConfigSchema>

/** The `LearningRateSchedule` of a schedule config (a function passes through). */
export function resolveSchedule(schedule: ScheduleConfig | LearningRateSchedule | undefined): LearningRateSchedule {
  if (schedule === undefined) return constantSchedule()
  if (typeof schedule === 'function') return schedule
  const parsed = scheduleConfigSchema.parse(schedule)
  switch (parsed.type) {
    case 'constant':
      return constantSchedule({ warmupSteps: parsed.warmupSteps })
    case 'warmup-cosine': {
      const { warmupSteps, holdSteps, totalSteps, minRatio } = parsed
      if (holdSteps === 0) return warmupCosineSchedule({ warmupSteps, totalSteps, minRatio })
      // Warm-up, then 1 for `holdSteps`, then the cosine over what is left (its own step 0 at the end of the hold).
      const warmup = constantSchedule({ warmupSteps })
      const decay = warmupCosineSchedule({ totalSteps: Math.max(1, totalSteps - warmupSteps - holdSteps), minRatio })
      return (step) => (step < warmupSteps + holdSteps ? warmup(step) : decay(step - warmupSteps - holdSteps))
    }
    case 'warmup-linear':
      return warmupLinearSchedule({ warmupSteps: parsed.warmupSteps, totalSteps: parsed.totalSteps })
  }
}
