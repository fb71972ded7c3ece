import { warmupCosineSchedule } from '@ludic/model'
import { describe, expect, it } from 'vitest'
import { resolveSchedule, scheduleConfigSchema } from './schedule.js'

describe('resolveSchedule', () => {
  it('warmup-cosine without a hold is @ludic/model’s warmupCosineSchedule', () => {
    const schedule = resolveSchedule({ type: 'warmup-cosine', warmupSteps: 2, totalSteps: 10, minRatio: 0.1 })
    const model = warmupCosineSchedule({ warmupSteps: 2, totalSteps: 10, minRatio: 0.1 })
    for (let step = 0; step <= 10; step++) expect(schedule(step)).toBe(model(step))
  })

  it('holds the full rate for holdSteps after the warm-up, then decays by a cosine to minRatio at totalSteps', () => {
    const schedule = resolveSchedule({ type: 'warmup-cosine', warmupSteps: 2, holdSteps: 3, totalSteps: 9, minRatio: 0.1 })
    expect([0, 1].map(schedule)).toEqual([0, 0.5])
    expect([2, 3, 4].map(schedule)).toEqual([1, 1, 1])
    // The decay: 4 steps from step 5, cos(π·k/4) for k = 0 … 4.
    for (let k = 0; k <= 4; k++) expect(schedule(5 + k)).toBeCloseTo(0.1 + 0.9 * 0.5 * (1 + Math.cos((Math.PI * k) / 4)), 12)
    expect(schedule(9)).toBeCloseTo(0.1, 12)
  })

  it('a hold as long as the run keeps the full rate', () => {
    const schedule = resolveSchedule({ type: 'warmup-cosine', holdSteps: 5, totalSteps: 4, minRatio: 0 })
    expect([0, 1, 2, 3, 4].map(schedule)).toEqual([1, 1, 1, 1, 1])
  })

  it('rejects a negative hold', () => {
    expect(scheduleConfigSchema.safeParse({ type: 'warmup-cosine', holdSteps: -1, totalSteps: 4 }).success).toBe(false)
  })
})
