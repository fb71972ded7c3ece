import { constantSchedule, warmupCosineSchedule, warmupLinearSchedule, type LearningRateSchedule } from '@ludic/model'
import { z } from 'zod'

/** A learning-rate schedule by name (JSON-friendly): multiplier of the base rate at each update. */
export const scheduleConfigSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('constant'), warmupSteps: z.number().int().min(0).default(0) }),
  z.strictObject({
    type: z.literal('warmup-cosine'),
    warmupSteps: z.number().int().min(0).default(0),
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
    case 'warmup-cosine':
      return warmupCosineSchedule({ warmupSteps: parsed.warmupSteps, totalSteps: parsed.totalSteps, minRatio: parsed.minRatio })
    case 'warmup-linear':
      return warmupLinearSchedule({ warmupSteps: parsed.warmupSteps, totalSteps: parsed.totalSteps })
  }
}
