import { LudicError } from '@ludic/core'

const marker = Symbol.for('ludic.error.AsyncCollectorError')

/** A rollout worker that would not start, a batch that could not be played, or a worker that died. */
export class AsyncCollectorError extends LudicError {
  private readonly [marker] = true
  override readonly name: string = 'AsyncCollectorError'
  /** The worker it happened in, when one. */
  readonly workerIndex: number | undefined
  constructor(options: { message: string; workerIndex?: number; cause?: unknown }) {
    super(options.message, { cause: options.cause })
    this.workerIndex = options.workerIndex
  }

  static override isInstance(error: unknown): error is AsyncCollectorError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true
  }
}
