import { InvalidArgumentError, LudicError, type PolicyV1 } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import { describe, expect, it } from 'vitest'
import { createBatchingPolicy } from './batching-policy.js'
import { GenerationBatchError } from './generation-batch-error.js'
import { waitFor } from './test/episodes.js'

const request = (content: string) => ({ messages: [{ role: 'user' as const, content }], maxTokens: 8 })

describe('createBatchingPolicy', () => {
  it('merges calls made together into one generate call and gives each caller its own completions', async () => {
    const inner = createScriptedPolicy({ replies: (r) => `echo ${r.messages![0]!.content}` })
    const policy = createBatchingPolicy(inner, { windowMs: 1000, maxBatchSize: 5 })
    const answers = await Promise.all([0, 1, 2, 3, 4].map((index) => policy.generate(index === 2 ? [request('2a'), request('2b')] : [request(String(index))])))
    expect(answers.map((completions) => completions.map((completion) => completion.text))).toEqual([
      ['echo 0'],
      ['echo 1'],
      ['echo 2a', 'echo 2b'],
      ['echo 3'],
      ['echo 4'],
    ])
    // 6 requests with batches of at most 5: the first 5 go at once (full), the last one after them.
    expect(inner.calls).toBe(2)
    expect(policy.stats()).toEqual({ requests: 6, batches: 2, largestBatch: 5, queued: 0, inFlightBatches: 0, longestRunningBatchMs: 0 })
    expect(await policy.generate([])).toEqual([])
  })

  it('queues requests while a call runs and sends them together when it ends', async () => {
    let release: (() => void) | undefined
    const sizes: number[] = []
    const inner = createScriptedPolicy({ replies: () => 'x' })
    const gated: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'gated',
      async generate(requests) {
        sizes.push(requests.length)
        if (sizes.length === 1) await new Promise<void>((resolve) => (release = resolve))
        return inner.generate(requests)
      },
    }
    const policy = createBatchingPolicy(gated, { windowMs: 0 })
    const first = policy.generate([request('first')])
    await waitFor(() => release !== undefined)
    const rest = Promise.all(Array.from({ length: 7 }, (_, index) => policy.generate([request(String(index))])))
    expect(policy.stats().queued).toBe(7)
    release?.()
    await Promise.all([first, rest])
    expect(sizes).toEqual([1, 7])
  })

  it('fails only the callers whose requests failed', async () => {
    const inner = createScriptedPolicy({ replies: () => 'ok' })
    const picky: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'picky',
      async generate(requests) {
        const completions = await inner.generate(requests)
        const errors = requests.map((r) => (r.messages![0]!.content === 'bad' ? new LudicError('bad request') : undefined))
        throw new GenerationBatchError({ policyId: 'picky', completions: completions.map((c, i) => (errors[i] ? undefined : c)), errors })
      },
    }
    const policy = createBatchingPolicy(picky, { windowMs: 1000, maxBatchSize: 4 })
    const results = await Promise.allSettled([
      policy.generate([request('good')]),
      policy.generate([request('bad')]),
      policy.generate([request('good'), request('bad')]),
      policy.generate([request('good')]),
    ])
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled'])
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(LudicError)
    expect((results[1] as PromiseRejectedResult).reason.message).toBe('bad request')
    const mixed = (results[2] as PromiseRejectedResult).reason
    expect(GenerationBatchError.isInstance(mixed)).toBe(true)
    expect(mixed.completions[0]?.text).toBe('ok')
    expect(mixed.completions[1]).toBeUndefined()

    const broken = createBatchingPolicy({ specificationVersion: 'v1', id: 'broken', generate: () => Promise.reject(new Error('down')) })
    await expect(broken.generate([request('a'), request('b')])).rejects.toThrow('down')
  })

  it('per caller: a signal takes its requests out of the queue or leaves the batch (aborted once all have left); onText gets its own text', async () => {
    let release: (() => void) | undefined
    const seen: { contents: string[]; signal: AbortSignal | undefined }[] = []
    const streaming: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'streaming',
      async generate(requests, options = {}) {
        seen.push({ contents: requests.map((r) => r.messages![0]!.content), signal: options.signal })
        if (seen.length === 1) await new Promise<void>((resolve) => (release = resolve))
        requests.forEach((r, index) => options.onText?.(index, `<${r.messages![0]!.content}>`))
        return createScriptedPolicy({ replies: (r) => `<${r.messages![0]!.content}>` }).generate(requests)
      },
    }
    const policy = createBatchingPolicy(streaming, { windowMs: 0 })
    const leaving = new AbortController()
    const first = policy.generate([request('first')], { signal: leaving.signal }).catch((error: unknown) => error)
    await waitFor(() => release !== undefined)
    const queued = new AbortController()
    const dropped = policy.generate([request('dropped')], { signal: queued.signal }).catch((error: unknown) => error)
    const texts: [number, string][] = []
    const kept = policy.generate([request('a'), request('b')], { onText: (index, text) => texts.push([index, text]) })
    queued.abort(new Error('not needed'))
    expect(await dropped).toMatchObject({ message: 'not needed' })
    expect(policy.stats().queued).toBe(2)
    leaving.abort(new Error('gone'))
    expect(await first).toMatchObject({ message: 'gone' }) // at once, while its batch still runs
    expect(seen[0]!.signal!.aborted).toBe(true) // its only caller left
    release!()
    expect((await kept).map((completion) => completion.text)).toEqual(['<a>', '<b>'])
    expect(seen.map((call) => call.contents)).toEqual([['first'], ['a', 'b']]) // 'dropped' never reached the policy
    expect(texts).toEqual([
      [0, '<a>'],
      [1, '<b>'],
    ])
  })

  it('checks its options', () => {
    const inner = createScriptedPolicy({ replies: [] })
    expect(() => createBatchingPolicy(inner, { maxBatchSize: 0 })).toThrow(InvalidArgumentError)
    expect(() => createBatchingPolicy(inner, { windowMs: -1 })).toThrow(/options.windowMs/)
  })
})
