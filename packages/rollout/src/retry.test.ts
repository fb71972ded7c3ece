import { describe, expect, it } from 'vitest'
import { backoffDelay, RetriesExhausted, withRetries } from './retry.js'

describe('withRetries', () => {
  it('backs off exponentially up to the cap, then gives up with the last error and the attempt count', async () => {
    const delays: number[] = []
    let attempts = 0
    const failure = await withRetries(
      async () => {
        attempts++
        throw new Error(`attempt ${attempts}`)
      },
      { maxRetries: 5, initialDelayMs: 100, maxDelayMs: 500, shouldRetry: () => true, sleep: async (ms) => void delays.push(ms), random: () => 0 },
    ).catch((error: unknown) => error)
    expect(delays).toEqual([100, 200, 400, 500, 500])
    expect(failure).toBeInstanceOf(RetriesExhausted)
    expect((failure as RetriesExhausted).attempts).toBe(6)
    expect(((failure as RetriesExhausted).error as Error).message).toBe('attempt 6')
  })

  it('succeeds on a later attempt, stops at once on a non-retryable error, and honours a given delay', async () => {
    const delays: number[] = []
    const sleep = async (ms: number) => void delays.push(ms)
    let calls = 0
    const value = await withRetries(async (attempt) => (++calls < 3 ? Promise.reject(new Error('busy')) : attempt), {
      maxRetries: 3,
      initialDelayMs: 10,
      maxDelayMs: 1000,
      shouldRetry: () => ({ delayMs: 2000 }),
      sleep,
    })
    expect(value).toBe(3)
    expect(delays).toEqual([1000, 1000]) // a server's retry-after, capped

    const stopped = await withRetries(async () => Promise.reject(new Error('bad request')), {
      maxRetries: 3,
      initialDelayMs: 10,
      maxDelayMs: 100,
      shouldRetry: () => false,
      sleep,
    }).catch((error: unknown) => error)
    expect((stopped as RetriesExhausted).attempts).toBe(1)
  })

  it('takes up to 25 % jitter off the delay', () => {
    expect(backoffDelay(2, { initialDelayMs: 100, maxDelayMs: 8000, random: () => 0.999999 })).toBeCloseTo(300, 2)
    expect(backoffDelay(0, { initialDelayMs: 100, maxDelayMs: 8000, random: () => 0.5 })).toBe(87.5)
  })
})
