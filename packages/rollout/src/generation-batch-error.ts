import { LudicError, type Completion, type GenerateOptions, type GenerationRequest, type PolicyV1 } from '@ludic/core'

const marker = Symbol.for('ludic.error.GenerationBatchError')

/**
 * Some requests of a batched `generate` call failed and others did not. A policy that can tell its
 * requests apart (a remote policy sends one HTTP request each) throws this instead of failing the whole
 * batch, so a caller keeps the completions it got: `collect` fails only the episodes whose requests
 * failed, the server answers 500 only to the requests that failed. A policy that throws any other error
 * fails every request of the batch.
 */
export class GenerationBatchError extends LudicError {
  private readonly [marker] = true
  override readonly name = 'GenerationBatchError'
  readonly policyId: string
  /** Per request, in order: its completion, or `undefined` where it failed. */
  readonly completions: readonly (Completion | undefined)[]
  /** Per request, in order: why it failed, or `undefined` where it succeeded. */
  readonly errors: readonly unknown[]

  constructor(options: { policyId: string; completions: readonly (Completion | undefined)[]; errors: readonly unknown[]; message?: string }) {
    const failed = options.errors.flatMap((error, index) => (error === undefined ? [] : [index]))
    const first = failed[0] === undefined ? undefined : options.errors[failed[0]]
    const reason = first instanceof Error ? first.message : String(first)
    super(
      options.message ?? `Policy '${options.policyId}': ${failed.length} of ${options.errors.length} requests failed (first, request ${failed[0]}: ${reason})`,
      { cause: first },
    )
    this.policyId = options.policyId
    this.completions = options.completions
    this.errors = options.errors
  }

  static override isInstance(error: unknown): error is GenerationBatchError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true
  }
}

/** Per request of a batch: its completion, or its own error (from a `GenerationBatchError`), or the batch's error. */
export type GenerationResult = { completion: Completion; error?: undefined } | { completion?: undefined; error: unknown }

/**
 * Runs one batched `generate` call and returns one result per request, never throwing: a
 * `GenerationBatchError` is split per request, any other error (or a wrong number of completions) is
 * every request's error.
 */
export async function generateEach(
  policy: Pick<PolicyV1, 'id' | 'generate'>,
  requests: readonly GenerationRequest[],
  options?: GenerateOptions,
): Promise<GenerationResult[]> {
  try {
    const completions = await (options === undefined ? policy.generate(requests) : policy.generate(requests, options))
    if (!Array.isArray(completions) || completions.length !== requests.length) {
      const error = new LudicError(
        `Policy '${policy.id}' returned ${Array.isArray(completions) ? completions.length : describe(completions)} completions for ${requests.length} requests`,
      )
      return requests.map(() => ({ error }))
    }
    return completions.map((completion) => ({ completion }))
  } catch (error) {
    if (GenerationBatchError.isInstance(error) && error.completions.length === requests.length) {
      return requests.map((_, index) => {
        const completion = error.completions[index]
        const own = error.errors[index]
        if (own !== undefined || completion === undefined) return { error: own ?? error }
        return { completion }
      })
    }
    return requests.map(() => ({ error }))
  }
}

function describe(value: unknown): string {
  return value === null ? 'null' : typeof value
}
