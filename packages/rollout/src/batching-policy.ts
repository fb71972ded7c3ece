import { parseArgument, type Completion, type GenerationRequest, type PolicyV1 } from '@ludic/core'
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
}

export interface BatchingPolicy extends PolicyV1 {
  stats(): BatchingStats
}

interface Waiting {
  request: GenerationRequest
  resolve(result: GenerationResult): void
}

/**
 * Wraps a policy so that `generate` calls made at about the same time by different callers (concurrent
 * HTTP requests to a server) become one batched `generate` call of the wrapped policy: requests wait up
 * to `windowMs` for company, or less when a batch fills up. Each caller gets its own completions; when
 * the wrapped policy fails only some requests (`GenerationBatchError`), only their callers see an error.
 */
export function createBatchingPolicy(policy: PolicyV1, options: BatchingPolicyOptions = {}): BatchingPolicy {
  const { windowMs, maxBatchSize, maxConcurrentBatches } = parseArgument(batchingPolicyOptionsSchema, options, 'options')
  const queue: Waiting[] = []
  const stats = { requests: 0, batches: 0, largestBatch: 0 }
  let inFlight = 0
  let timer: ReturnType<typeof setTimeout> | undefined

  const flush = () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    while (inFlight < maxConcurrentBatches && queue.length > 0) {
      const batch = queue.splice(0, maxBatchSize)
      inFlight++
      stats.batches++
      stats.largestBatch = Math.max(stats.largestBatch, batch.length)
      void generateEach(
        policy,
        batch.map((waiting) => waiting.request),
      ).then((results) => {
        inFlight--
        batch.forEach((waiting, index) => waiting.resolve(results[index]!))
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
    stats: () => ({ ...stats, queued: queue.length, inFlightBatches: inFlight }),
    async generate(requests: readonly GenerationRequest[]): Promise<Completion[]> {
      if (requests.length === 0) return []
      stats.requests += requests.length
      const results = requests.map((request) => new Promise<GenerationResult>((resolve) => queue.push({ request, resolve })))
      schedule()
      const settled = await Promise.all(results)
      const errors = settled.map((result) => result.error)
      if (errors.every((error) => error === undefined)) return settled.map((result) => result.completion!)
      // One error for all (the whole batch failed): pass it on as it is.
      if (errors.every((error) => error !== undefined && error === errors[0])) throw errors[0]
      throw new GenerationBatchError({ policyId: policy.id, completions: settled.map((result) => result.completion), errors })
    },
  }
}
