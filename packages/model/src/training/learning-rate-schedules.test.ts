import { describe, expect, it } from 'vitest'
import { InvalidArgumentError } from '@ludic/core'
import { constantSchedule, warmupCosineSchedule, warmupLinearSchedule, type LearningRateSchedule } from './learning-rate-schedules.js'
import { loadOptimizerReferences, type ScheduleReferenceCase } from '../test/optimizer-references.js'

const references = loadOptimizerReferences()

function scheduleFor(reference: ScheduleReferenceCase): LearningRateSchedule {
  switch (reference.function) {
    case 'get_cosine_schedule_with_warmup':
    case 'get_cosine_with_min_lr_schedule_with_warmup':
      return warmupCosineSchedule({ totalSteps: reference.options.totalSteps!, ...reference.options })
    case 'get_linear_schedule_with_warmup':
      return warmupLinearSchedule({ totalSteps: reference.options.totalSteps!, ...reference.options })
    case 'get_constant_schedule_with_warmup':
    case 'get_constant_schedule':
      return constantSchedule(reference.options)
    default:
      throw new Error(`no schedule for ${reference.function}`)
  }
}

describe('learning-rate schedules', () => {
  let largestDifference = 0
  for (const reference of references.schedules) {
    it(`match transformers ${references.transformers} ${reference.function}: ${reference.id}`, () => {
      const schedule = scheduleFor(reference)
      reference.values.forEach((expected, step) => {
        const actual = schedule(step)
        largestDifference = Math.max(largestDifference, Math.abs(actual - expected))
        // Python and V8 share IEEE double arithmetic; only cos may differ in its last bit.
        expect(Math.abs(actual - expected), `${reference.id} step ${step}: ${actual} vs ${expected}`).toBeLessThanOrEqual(2e-16)
      })
    })
  }

  it('agree to the last bit or nearly (for the report)', () => {
    console.info(`schedules vs transformers ${references.transformers}: largest |Δ| ${largestDifference.toExponential(2)}`)
  })

  it('warm up linearly from 0 and decay to minRatio', () => {
    const schedule = warmupCosineSchedule({ warmupSteps: 4, totalSteps: 14, minRatio: 0.2 })
    expect([0, 1, 2, 3, 4].map(schedule)).toEqual([0, 0.25, 0.5, 0.75, 1])
    expect(schedule(9)).toBeCloseTo(0.6, 12)
    expect(schedule(14)).toBeCloseTo(0.2, 12)
    expect(constantSchedule()(123)).toBe(1)
    expect(warmupLinearSchedule({ totalSteps: 4 })(2)).toBe(0.5)
    expect(warmupLinearSchedule({ totalSteps: 4 })(9)).toBe(0)
  })

  it('name bad options and steps', () => {
    expect(() => warmupCosineSchedule({ warmupSteps: 1 } as never)).toThrow(/'options\.totalSteps'/)
    expect(() => warmupCosineSchedule({ totalSteps: 10, minRatio: 1.5 })).toThrow(/'options\.minRatio' \(value: 1\.5\)/)
    expect(() => warmupCosineSchedule({ totalSteps: 10, cycles: 0 })).toThrow(InvalidArgumentError)
    expect(() => constantSchedule({ warmupSteps: -1 })).toThrow(/'options\.warmupSteps' \(value: -1\)/)
    expect(() => warmupLinearSchedule({ totalSteps: 10, decay: 1 } as never)).toThrow(/'options'/)
    expect(() => constantSchedule()(1.5)).toThrow(/'step' \(value: 1\.5\)/)
    expect(() => constantSchedule()(-1)).toThrow(InvalidArgumentError)
  })
})
