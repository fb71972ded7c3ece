import { describe, expect, it } from 'vitest'
import { AdaptiveKlController, createKlController, FixedKlController } from './kl-controller.js'

describe('KL controllers', () => {
  it('adaptive: β ← β·(1 + clip(KL/target − 1, ±0.2)·n/horizon), as verl', () => {
    const controller = new AdaptiveKlController({ initKlCoef: 0.2, targetKl: 6, horizon: 10000 })
    controller.update(9, 256) // error clipped to +0.2
    expect(controller.value).toBeCloseTo(0.2 * (1 + (0.2 * 256) / 10000), 12)
    controller.update(5.4, 100) // error −0.1
    expect(controller.value).toBeCloseTo(0.2 * (1 + (0.2 * 256) / 10000) * (1 - (0.1 * 100) / 10000), 12)
    controller.update(0, 1000) // clipped to −0.2
    expect(controller.value).toBeLessThan(0.2)
    expect(new AdaptiveKlController().value).toBe(0.001)
  })

  it('fixed never moves; the factory maps verl kl_ctrl; bad values are named', () => {
    const fixed = new FixedKlController({ klCoef: 0.05 })
    fixed.update(100, 100)
    expect(fixed.value).toBe(0.05)
    expect(createKlController({ type: 'fixed', klCoef: 0.1 }).value).toBe(0.1)
    const adaptive = createKlController({ type: 'adaptive', initKlCoef: 0.1, targetKl: 1, horizon: 10 })
    adaptive.update(2, 5)
    expect(adaptive.value).toBeCloseTo(0.1 * 1.1, 12)
    expect(() => new AdaptiveKlController({ horizon: 0 })).toThrow(/options.horizon/)
    expect(() => createKlController({ type: 'pid' } as never)).toThrow(/options/)
    expect(() => adaptive.update(Number.NaN, 1)).toThrow(/'currentKl'/)
  })
})
