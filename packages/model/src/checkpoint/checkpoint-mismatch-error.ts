import { ParseError } from '@ludic/core'

/** A tensor whose shape differs from what the configuration implies. */
export interface MisshapedTensor {
  name: string
  expected: readonly number[]
  actual: readonly number[]
}

const marker = Symbol.for('ludic.error.CheckpointMismatchError')

/**
 * The weights of a checkpoint do not fit its configuration: lists every missing, unexpected and misshaped
 * tensor at once. It is a `ParseError` (its `name` stays `'ParseError'`; `source` is the checkpoint directory);
 * `CheckpointMismatchError.isInstance` tells it apart.
 */
export class CheckpointMismatchError extends ParseError {
  private readonly [marker] = true
  readonly missing: readonly string[]
  readonly unexpected: readonly string[]
  readonly misshaped: readonly MisshapedTensor[]

  constructor(options: {
    source: string
    missing: readonly string[]
    unexpected: readonly string[]
    misshaped: readonly MisshapedTensor[]
    /** What the weights were checked against, in words. Default: `'the weights do not match config.json'`. */
    summary?: string
  }) {
    const parts: string[] = []
    if (options.missing.length > 0) parts.push(`missing ${options.missing.length}: ${options.missing.join(', ')}`)
    if (options.unexpected.length > 0) parts.push(`unexpected ${options.unexpected.length}: ${options.unexpected.join(', ')}`)
    if (options.misshaped.length > 0) {
      parts.push(
        `misshaped ${options.misshaped.length}: ${options.misshaped
          .map((tensor) => `${tensor.name} is [${tensor.actual.join(', ')}], expected [${tensor.expected.join(', ')}]`)
          .join('; ')}`,
      )
    }
    super({ source: options.source, message: `${options.summary ?? 'the weights do not match config.json'} (${parts.join('; ')})` })
    this.missing = options.missing
    this.unexpected = options.unexpected
    this.misshaped = options.misshaped
  }

  static override isInstance(error: unknown): error is CheckpointMismatchError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true
  }
}
