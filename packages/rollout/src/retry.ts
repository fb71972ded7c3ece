/**
 * Retries with exponential backoff, as the `openai` SDK does (0.5 s doubling up to 8 s, up to 25 %
 * jitter off), but with the delays as options and the decision to retry in the caller's hands.
 */
export interface RetryOptions {
  /** Retries after the first attempt. */
  maxRetries: number
  /** Delay before the first retry, in milliseconds; doubles on each retry. */
  initialDelayMs: number
  /** Largest delay, in milliseconds (also caps a server's `retry-after`). */
  maxDelayMs: number
  /**
   * Whether an error may be retried, and optionally after how long (a server's `retry-after`).
   * `false` ends the attempts at once.
   */
  shouldRetry(error: unknown): boolean | { delayMs: number }
  /** Waits; default `setTimeout`. Tests pass a recorder. */
  sleep?: (milliseconds: number) => Promise<void>
  /** A number in [0, 1) for jitter; default `Math.random` (timing only: results never depend on it). */
  random?: () => number
}

/** The error of the last attempt, and how many attempts were made. */
export class RetriesExhausted {
  constructor(
    readonly error: unknown,
    readonly attempts: number,
  ) {}
}

const defaultSleep = (milliseconds: number) => new Promise<void>((resolve) => setTimeout(resolve, milliseconds))

/** Waits `milliseconds`, or rejects with the signal's reason as soon as it aborts. */
export function abortableSleep(milliseconds: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return defaultSleep(milliseconds)
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, milliseconds)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}

/** The delay before retry number `retry` (0-based): initial · 2^retry, capped, with up to 25 % jitter off. */
export function backoffDelay(retry: number, options: Pick<RetryOptions, 'initialDelayMs' | 'maxDelayMs' | 'random'>): number {
  const base = Math.min(options.initialDelayMs * 2 ** retry, options.maxDelayMs)
  return base * (1 - (options.random ?? Math.random)() * 0.25)
}

/**
 * Calls `attempt(n)` (n = 1, 2, …) until it resolves, or rejects with a `RetriesExhausted` holding the
 * last error and the number of attempts.
 */
export async function withRetries<T>(attempt: (attemptNumber: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const sleep = options.sleep ?? defaultSleep
  for (let attemptNumber = 1; ; attemptNumber++) {
    try {
      return await attempt(attemptNumber)
    } catch (error) {
      const decision = options.shouldRetry(error)
      if (decision === false || attemptNumber > options.maxRetries) throw new RetriesExhausted(error, attemptNumber)
      const delay = typeof decision === 'object' ? Math.min(Math.max(decision.delayMs, 0), options.maxDelayMs) : backoffDelay(attemptNumber - 1, options)
      await sleep(delay)
    }
  }
}
