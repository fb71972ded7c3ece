import { LudicError, type Completion, type PolicyV1 } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { GenerationBatchError, generateEach } from './generation-batch-error.js'

const completion = (text: string): Completion => ({
  text,
  promptTokenIds: new Int32Array(0),
  tokenIds: new Int32Array(0),
  logprobs: new Float32Array(0),
  finishReason: 'stop',
})
const request = { messages: [{ role: 'user' as const, content: 'x' }], maxTokens: 1 }
const policy = (generate: PolicyV1['generate']): PolicyV1 => ({ specificationVersion: 'v1', id: 'p', generate })

describe('GenerationBatchError and generateEach', () => {
  it('summarises which requests failed and is recognised across copies', () => {
    const cause = new LudicError('boom')
    const error = new GenerationBatchError({ policyId: 'p', completions: [completion('a'), undefined], errors: [undefined, cause] })
    expect(error.message).toBe("Policy 'p': 1 of 2 requests failed (first, request 1: boom)")
    expect(error.cause).toBe(cause)
    expect(GenerationBatchError.isInstance(error)).toBe(true)
    expect(LudicError.isInstance(error)).toBe(true)
    expect(GenerationBatchError.isInstance(new LudicError('x'))).toBe(false)
  })

  it('splits results per request and never throws', async () => {
    const ok = await generateEach(
      policy(async () => [completion('a'), completion('b')]),
      [request, request],
    )
    expect(ok.map((result) => result.completion?.text)).toEqual(['a', 'b'])

    const partialError = new GenerationBatchError({ policyId: 'p', completions: [completion('a'), undefined], errors: [undefined, new Error('second')] })
    const partial = await generateEach(
      policy(() => Promise.reject(partialError)),
      [request, request],
    )
    expect(partial[0]?.completion?.text).toBe('a')
    expect((partial[1]!.error as Error).message).toBe('second')

    const thrown = new Error('all down')
    const all = await generateEach(
      policy(() => {
        throw thrown
      }),
      [request, request],
    )
    expect(all.map((result) => result.error)).toEqual([thrown, thrown])

    const wrongCount = await generateEach(
      policy(async () => [completion('a')]),
      [request, request],
    )
    expect((wrongCount[0]!.error as Error).message).toBe("Policy 'p' returned 1 completions for 2 requests")
  })
})
