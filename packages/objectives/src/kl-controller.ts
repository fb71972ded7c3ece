import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { requireFiniteNumber } from './tensor-checks.js'

/**
 * KL coefficient controllers for a KL penalty in the reward (verl `AdaptiveKLController` /
 * `FixedKLController`). The trainer reads `value`, penalises the rewards with `value · kl`, then calls
 * `update(currentKl, nSteps)` with the batch's mean KL and its size.
 */
export interface KlController {
  /** The current coefficient β. */
  readonly value: number
  update(currentKl: number, nSteps: number): void
}

export const adaptiveKlControllerOptionsSchema = z.strictObject({
  /** Initial coefficient β₀ (verl `kl_coef`). Default 0.001. */
  initKlCoef: z.number().nonnegative().default(0.001),
  /** Target KL per step (verl `target_kl`). Default 0.1. */
  targetKl: z.number().positive().default(0.1),
  /** Horizon in steps (samples) over which β moves by up to ±20 % (verl `horizon`). Must be > 0. Default 10000. */
  horizon: z.number().positive().default(10000),
})
export type AdaptiveKlControllerOptions = z.input<typeof adaptiveKlControllerOptionsSchema>

/**
 * Adaptive KL controller (Ziegler et al. 2019, https://arxiv.org/abs/1909.08593):
 * e = clip(KL/target − 1, −0.2, 0.2);  β ← β·(1 + e·nSteps/horizon).
 */
export class AdaptiveKlController implements KlController {
  value: number
  readonly targetKl: number
  readonly horizon: number

  constructor(options: AdaptiveKlControllerOptions = {}) {
    const parsed = parseArgument(adaptiveKlControllerOptionsSchema, options, 'options')
    this.value = parsed.initKlCoef
    this.targetKl = parsed.targetKl
    this.horizon = parsed.horizon
  }

  update(currentKl: number, nSteps: number): void {
    requireFiniteNumber(currentKl, 'currentKl', 'AdaptiveKlController.update')
    requireFiniteNumber(nSteps, 'nSteps', 'AdaptiveKlController.update')
    const proportionalError = Math.min(Math.max(currentKl / this.targetKl - 1, -0.2), 0.2)
    this.value *= 1 + (proportionalError * nSteps) / this.horizon
  }
}

export const fixedKlControllerOptionsSchema = z.strictObject({
  /** The coefficient β (verl `kl_coef`). Default 0.001. */
  klCoef: z.number().nonnegative().default(0.001),
})
export type FixedKlControllerOptions = z.input<typeof fixedKlControllerOptionsSchema>

/** A constant coefficient; `update` does nothing. */
export class FixedKlController implements KlController {
  readonly value: number

  constructor(options: FixedKlControllerOptions = {}) {
    this.value = parseArgument(fixedKlControllerOptionsSchema, options, 'options').klCoef
  }

  update(currentKl: number, nSteps: number): void {
    void currentKl
    void nSteps
  }
}

export const klControllerOptionsSchema = z.discriminatedUnion('type', [
  fixedKlControllerOptionsSchema.extend({ type: z.literal('fixed') }),
  adaptiveKlControllerOptionsSchema.extend({ type: z.literal('adaptive') }),
])
export type KlControllerOptions = z.input<typeof klControllerOptionsSchema>

/** verl `get_kl_controller`: `{ type: 'fixed', klCoef }` or `{ type: 'adaptive', initKlCoef, targetKl, horizon }`. */
export function createKlController(options: KlControllerOptions): KlController {
  const parsed = parseArgument(klControllerOptionsSchema, options, 'options')
  if (parsed.type === 'fixed') return new FixedKlController({ klCoef: parsed.klCoef })
  return new AdaptiveKlController({ initKlCoef: parsed.initKlCoef, targetKl: parsed.targetKl, horizon: parsed.horizon })
}
