import { InvalidArgumentError } from '@ludic/core'

const marker = Symbol.for('ludic.error.ContextLengthError')

/**
 * A sequence would span more positions than the model's context (`model.maxContextTokens`, by default the
 * config's `max_position_embeddings`): a prompt plus its new tokens, a prompt plus its response, a forward
 * pass's positions. Raised before anything reaches the backend. It is an `InvalidArgumentError` (its `name`
 * stays `'InvalidArgumentError'`; a server answers 400, OpenAI's `context_length_exceeded`):
 * `ContextLengthError.isInstance` tells it apart. `limit` is the context, `requested` the positions asked for.
 */
export class ContextLengthError extends InvalidArgumentError {
  private readonly [marker] = true
  readonly limit: number
  readonly requested: number

  constructor(options: { argument: string; value: unknown; limit: number; requested: number; message: string }) {
    super({ argument: options.argument, value: options.value, message: options.message })
    this.limit = options.limit
    this.requested = options.requested
  }

  static override isInstance(error: unknown): error is ContextLengthError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true
  }
}

/** What `checkContextLength` needs of a model. */
export interface ContextLimited {
  readonly maxContextTokens: number
  readonly config: { readonly maxPositionEmbeddings: number }
}

/**
 * Throws a `ContextLengthError` when `requested` positions exceed the model's context (`limit`, by default
 * `model.maxContextTokens`). `what` says what they are, for the message (`'inputIds[0] (6000 tokens) + maxNewTokens (1)'`).
 */
export function checkContextLength(model: ContextLimited, requested: number, options: { argument: string; value: unknown; what: string }): void {
  const limit = model.maxContextTokens
  if (requested <= limit) return
  const source = limit === model.config.maxPositionEmbeddings ? "the config's max_position_embeddings" : 'model.maxContextTokens'
  throw new ContextLengthError({
    argument: options.argument,
    value: options.value,
    limit,
    requested,
    message:
      `${options.what}: ${requested} positions, past the model's context of ${limit} tokens (${source}); ` +
      "shorten the input, or raise the limit with the model's maxContextTokens (a loadModel/createModel option, or `model.maxContextTokens = n`) if the model can attend that far",
  })
}
