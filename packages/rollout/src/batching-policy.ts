import { InvalidArgumentError, parseArgument, type Completion, type GenerateOptions, type GenerationRequest, type PolicyV1 } from '@ludic/core'
import { z } from 'zod'
import { GenerationBatchError, generateEach, type GenerationResult } from './generation-batch-error.js'

export const batchingPolicyOptionsSchema = z.strictObject({
  /** How long the first waiting request waits for others to join its batch, in ms. Default: 5. */
  windowMs: z.number().min(0).refine(Number.isFinite, 'must be finite').default(5),
  /** Requests per underlying `generate` call at most; a full batch goes at once. Default: 64. */
  maxBatchSize: z.number().int().min(1).default(64),
  /**
   * Underlying `generate` calls in flight at most; requests arriving meanwhile wait and go together as
   * soon as a call ends. Default: 1 (a local model computes one batch at a time).
   */
  maxConcurrentBatches: z.number().int().min(1).default(1),
})
export type BatchingPolicyOptions = z.input<typeof batchingPolicyOptionsSchema>

export interface BatchingStats {
  /** Requests received. */
  requests: number
  /** Underlying `generate` calls made. */
  batches: number
  largestBatch: number
  /** Requests waiting for a batch now. */
  queued: number
  /** Underlying calls running now. */
  inFlightBatches: number
  /**
   * How long the oldest underlying call still running has run, in ms (0: none). It runs until the wrapped policy
   * settles it, even after its callers left: a call that never settles (a policy stuck on a lock) shows here.
   */
  longestRunningBatchMs: number
}

export interface BatchingPolicy extends PolicyV1 {
  stats(): BatchingStats
}

interface Waiting {
  request: GenerationRequest
  /** Settles the caller's request (once: later calls are ignored). */
  resolve(result: GenerationResult): void
  onText: ((text: string) => void) | undefined
  /** Set while its batch runs: tells the batch that this caller has left. */
  leave: (() => void) | undefined
  gone: boolean
}

/**
 * Wraps a policy so that `generate` calls made at about the same time by different callers (concurrent
 * HTTP requests to a server) become one batched `generate` call of the wrapped policy: requests wait up
 * to `windowMs` for company, or less when a batch fills up. Each caller gets its own completions; when
 * the wrapped policy fails only some requests (`GenerationBatchError`), only their callers see an error.
 * A batch refused as a whole with an `InvalidArgumentError` (one request past the model's context) is
 * retried one request at a time, so that only the bad request's caller sees the error.
 *
 * `generate`'s options are per caller: `signal` takes its requests out of the queue, or, once they run,
 * rejects at once and aborts the batch when every caller in it has left; `onText` gets its own requests'
 * text (when the wrapped policy streams).
 */
export function createBatchingPolicy(policy: PolicyV1, options: BatchingPolicyOptions = {}): BatchingPolicy {
  const { windowMs, maxBatchSize, maxConcurrentBatches } = parseArgument(batchingPolicyOptionsSchema, options, 'options')
  const queue: Waiting[] = []
  const stats = { requests: 0, batches: 0, largestBatch: 0 }
  let inFlight = 0
  /** When each underlying call still running started (`performance.now()`). */
  const running = new Set<{ startedAt: number }>()
  let timer: ReturnType<typeof setTimeout> | undefined

  /** One underlying call for `batch`, aborted when all its callers have left. */
  const run = (batch: Waiting[]): Promise<GenerationResult[]> => {
    const controller = new AbortController()
    let present = batch.filter((waiting) => !waiting.gone).length
    for (const waiting of batch) {
      waiting.leave = () => {
        if (--present === 0) controller.abort(new Error('every caller of this batch has left'))
      }
    }
    const call = { startedAt: performance.now() }
    running.add(call)
    const streaming = batch.some((waiting) => waiting.onText !== undefined)
    const options: GenerateOptions = {
      signal: controller.signal,
      ...(streaming ? { onText: (index: number, text: string) => (batch[index]?.gone ? undefined : batch[index]?.onText?.(text)) } : {}),
    }
    return generateEach(
      policy,
      batch.map((waiting) => waiting.request),
      options,
    ).finally(() => {
      running.delete(call)
      for (const waiting of batch) waiting.leave = undefined
    })
  }

  const runBatch = async (batch: Waiting[]) => {
    stats.batches++
    stats.largestBatch = Math.max(stats.largestBatch, batch.length)
    let results = await run(batch)
    const refused = results[0]?.error
    if (batch.length > 1 && InvalidArgumentError.isInstance(refused) && results.every((result) => result.error === refused)) {
      // One bad request refused them all (checked before any work): find it by sending each alone.
      results = []
      for (const waiting of batch) {
        if (waiting.gone) results.push({ error: new Error('the caller has left') })
        else results.push(...(await run([waiting])))
      }
    }
    batch.forEach((waiting, index) => waiting.resolve(results[index]!))
  }

  const flush = () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    while (inFlight < maxConcurrentBatches && queue.length > 0) {
      const batch = queue.splice(0, maxBatchSize)
      inFlight++
      void runBatch(batch).then(() => {
        inFlight--
        flush() // whoever arrived meanwhile has waited long enough
      })
    }
  }

  const schedule = () => {
    if (inFlight >= maxConcurrentBatches) return // a finishing call flushes
    if (queue.length >= maxBatchSize) return flush()
    timer ??= setTimeout(flush, windowMs)
  }

  return {
    specificationVersion: 'v1',
    id: policy.id,
    stats: () => {
      let oldest = Number.POSITIVE_INFINITY
      for (const call of running) oldest = Math.min(oldest, call.startedAt)
      const longestRunningBatchMs = running.size === 0 ? 0 : Math.round(performance.now() - oldest)
      return { ...stats, queued: queue.length, inFlightBatches: inFlight, longestRunningBatchMs }
    },
    async generate(requests: readonly GenerationRequest[], options: GenerateOptions = {}): Promise<Completion[]> {
      const { signal, onText } = options
      signal?.throwIfAborted()
      if (requests.length === 0) return []
      stats.requests += requests.length
      const waitings: Waiting[] = []
      const results = requests.map(
        (request, index) =>
          new Promise<GenerationResult>((resolve) => {
            let settled = false
            waitings.push({
              request,
              resolve: (result) => {
                if (settled) return
                settled = true
                resolve(result)
              },
              onText: onText === undefined ? undefined : (text) => onText(index, text),
              leave: undefined,
              gone: false,
            })
          }),
      )
      queue.push(...waitings)
      const onAbort = () => {
        for (const waiting of waitings) {
          waiting.gone = true
          const queued = queue.indexOf(waiting)
          if (queued >= 0) queue.splice(queued, 1)
          waiting.leave?.()
          waiting.resolve({ error: signal!.reason })
        }
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      schedule()
      const settled = await Promise.all(results).finally(() => signal?.removeEventListener('abort', onAbort))
      signal?.throwIfAborted()
      const errors = settled.map((result) => result.error)
      if (errors.every((error) => error === undefined)) return settled.map((result) => result.completion!)
      // One error for all (the whole batch failed): pass it on as it is.
      if (errors.every((error) => error !== undefined && error === errors[0])) throw errors[0]
      throw new GenerationBatchError({ policyId: policy.id, completions: settled.map((result) => result.completion), errors })
    },
  }
}
