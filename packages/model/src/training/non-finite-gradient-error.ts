import { LudicError } from '@ludic/core'

const marker = Symbol.for('ludic.error.NonFiniteGradientError')

/**
 * The global norm of the gradients is NaN or infinite, so they cannot be clipped or applied.
 * `parameters` names the parameters whose gradients hold NaN or ±Infinity (empty when every gradient is
 * finite but the sum of squares overflowed float32); `norm` is the offending norm.
 */
export class NonFiniteGradientError extends LudicError {
  private readonly [marker] = true
  override readonly name = 'NonFiniteGradientError'
  readonly parameters: readonly string[]
  readonly norm: number

  constructor(options: { parameters: readonly string[]; norm: number; cause?: unknown }) {
    const which =
      options.parameters.length > 0
        ? `non-finite gradients in ${options.parameters.length} parameter(s): ${options.parameters.join(', ')}`
        : 'every gradient is finite but the sum of their squares overflows float32'
    super(`The global gradient norm is ${options.norm}: ${which}. Nothing was clipped or applied.`, options)
    this.parameters = [...options.parameters]
    this.norm = options.norm
  }

  static override isInstance(error: unknown): error is NonFiniteGradientError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true
  }
}
