import { LudicError } from '@ludic/core'

const marker = Symbol.for('ludic.error.RemotePolicyError')

/** How a request to a remote policy failed: no connection, no answer in time, or an HTTP error status. */
export type RemoteFailureKind = 'connection' | 'timeout' | 'http'

/**
 * A request to an OpenAI-compatible server failed, after its retries where the failure was retryable.
 * `status`, `type`, `code` and `param` come from the server's error answer (`{ error: { … } }`);
 * `cause` is the `openai` SDK's error of the last attempt.
 */
export class RemotePolicyError extends LudicError {
  private readonly [marker] = true
  override readonly name = 'RemotePolicyError'
  readonly policyId: string
  /** The endpoint, e.g. `http://127.0.0.1:8000/v1/chat/completions`. */
  readonly url: string
  readonly kind: RemoteFailureKind
  /** HTTP status of the last attempt (`undefined` for connection failures and timeouts). */
  readonly status: number | undefined
  readonly type: string | undefined
  readonly code: string | undefined
  /** The request parameter the server named as wrong (400 answers). */
  readonly param: string | undefined
  /** Attempts made: 1 + retries. */
  readonly attempts: number
  /** Whether the failure was of a retryable kind (connection, timeout, 408, 409, 429, 5xx). */
  readonly retryable: boolean

  constructor(options: {
    policyId: string
    url: string
    kind: RemoteFailureKind
    status?: number | undefined
    type?: string | undefined
    code?: string | undefined
    param?: string | undefined
    attempts: number
    retryable: boolean
    detail: string
    cause?: unknown
  }) {
    const what = options.kind === 'http' ? `HTTP ${options.status}` : options.kind === 'timeout' ? 'timed out' : 'connection failed'
    const param = options.param === undefined ? '' : ` (param '${options.param}')`
    const tries = options.attempts === 1 ? '1 attempt' : `${options.attempts} attempts`
    super(`Policy '${options.policyId}': POST ${options.url} ${what} after ${tries}${param}: ${options.detail}`, { cause: options.cause })
    this.policyId = options.policyId
    this.url = options.url
    this.kind = options.kind
    this.status = options.status
    this.type = options.type
    this.code = options.code
    this.param = options.param
    this.attempts = options.attempts
    this.retryable = options.retryable
  }

  static override isInstance(error: unknown): error is RemotePolicyError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true
  }
}
