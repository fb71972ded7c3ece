import { InvalidArgumentError, LudicError, ParseError, type Completion, type GenerationRequest, type PolicyV1 } from '@ludic/core'
import { createByteTokenizer } from '@ludic/core/test'
import { afterEach, describe, expect, it } from 'vitest'
import { collect } from './collect.js'
import { GenerationBatchError } from './generation-batch-error.js'
import { createOpenAICompatiblePolicy, type OpenAICompatiblePolicyOptions } from './openai-compatible-policy.js'
import { serveOpenAICompatible, type OpenAICompatibleServer, type ServeOptions } from './openai-compatible-server.js'
import { RemotePolicyError } from './remote-policy-error.js'
import { createRandomWalk, createSeededPolicy, requestEpisodeSeed, waitFor } from './test/episodes.js'

const servers: OpenAICompatibleServer[] = []
const gates: (() => void)[] = []
afterEach(async () => {
  gates.splice(0).forEach((open) => open())
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

async function serve(policy: PolicyV1, options: ServeOptions = {}) {
  const server = await serveOpenAICompatible(policy, options)
  servers.push(server)
  return server
}

const fast = { retryDelayMs: 5, maxRetryDelayMs: 20 } satisfies Partial<OpenAICompatiblePolicyOptions>
const request = (content: string, extra: Partial<GenerationRequest> = {}): GenerationRequest => ({
  messages: [{ role: 'user', content }],
  maxTokens: 16,
  ...extra,
})

/** Rejects with what `generate` threw, checking it is a one-request GenerationBatchError, and returns that request's error. */
async function onlyError(promise: Promise<Completion[]>): Promise<unknown> {
  const error = await promise.then(
    () => new Error('expected a failure'),
    (caught: unknown) => caught,
  )
  expect(GenerationBatchError.isInstance(error)).toBe(true)
  return (error as GenerationBatchError).errors[0]
}

/** A policy whose generate waits until the test opens the gate (closed servers leave it waiting). */
function createGatedPolicy(): PolicyV1 & { calls: number } {
  const inner = createSeededPolicy('gated')
  const state = {
    specificationVersion: 'v1' as const,
    id: 'gated',
    calls: 0,
    async generate(requests: readonly GenerationRequest[]) {
      state.calls++
      await new Promise<void>((resolve) => gates.push(resolve))
      return inner.generate(requests)
    },
  }
  return state
}

describe('createOpenAICompatiblePolicy against serveOpenAICompatible', () => {
  it('round-trips texts, token ids, log-probs and finish reasons exactly', async () => {
    const served = createSeededPolicy('seeded')
    const server = await serve(served)
    const remote = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'seeded' })
    expect(remote).toMatchObject({ specificationVersion: 'v1', id: 'seeded' })
    const requests = [
      request('plain'),
      request('ünïcödé 👋🏽', { temperature: 0.8, topP: 0.95, topK: 40, minP: 0.05, stop: ['\n\n'], seed: 7 }),
      {
        messages: [
          { role: 'system' as const, content: 'rules' },
          { role: 'user' as const, content: 'go', name: 'referee' },
          { role: 'assistant' as const, content: 'ok' },
          { role: 'user' as const, content: 'again' },
        ],
        maxTokens: 3,
        seed: 123456789,
      },
    ]
    const completions = await remote.generate(requests)
    const expected = await createSeededPolicy('seeded').generate(requests)
    expect(completions).toEqual(expected)
    expect(completions[1]!.logprobs.some((logprob) => !Number.isInteger(logprob * 1024))).toBe(true) // not trivially representable
    expect(served.requests).toEqual(requests) // every sampling parameter arrived as sent
    expect(await remote.generate([])).toEqual([])
  })

  it("sends minTokens and ignoreEos as vLLM's min_tokens and ignore_eos, only when set", async () => {
    const seeded = createSeededPolicy('seeded')
    const received: GenerationRequest[] = []
    const recording: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'seeded',
      generate(requests) {
        received.push(...requests)
        // The scripted replies are fixed texts: it refuses the two fields, so they are taken off after being recorded.
        return seeded.generate(requests.map(({ minTokens: _, ignoreEos: __, ...rest }) => rest))
      },
    }
    const server = await serve(recording)
    const remote = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'seeded' })
    const requests: GenerationRequest[] = [
      request('both', { minTokens: 4, ignoreEos: true, seed: 1 }),
      request('defaults', { minTokens: 0, ignoreEos: false, seed: 2 }),
      { prompt: 'raw text', maxTokens: 8, minTokens: 8, seed: 3 },
    ]
    await remote.generate(requests)
    const byContent = (content: string) => received.find((each) => (each.messages?.[0]?.content ?? each.prompt) === content)
    expect(byContent('both')).toMatchObject({ minTokens: 4, ignoreEos: true })
    expect(byContent('defaults')).not.toHaveProperty('minTokens')
    expect(byContent('defaults')).not.toHaveProperty('ignoreEos')
    expect(byContent('raw text')).toMatchObject({ minTokens: 8 })
  })

  it('reads ids from token_id:<id> token strings when the server sends no id fields', async () => {
    const server = await serve(createSeededPolicy('seeded'))
    const noIds = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'seeded', returnTokenIds: false, requireTokenIds: false })
    const [completion] = await noIds.generate([request('hello')])
    const [expected] = await createSeededPolicy().generate([request('hello')])
    expect(completion!.tokenIds).toEqual(expected!.tokenIds)
    expect(completion!.logprobs).toEqual(expected!.logprobs)
    expect(completion!.promptTokenIds).toEqual(new Int32Array(0)) // no source for the prompt's ids

    const strict = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'seeded', returnTokenIds: false })
    const error = await onlyError(strict.generate([request('hello')]))
    expect(ParseError.isInstance(error)).toBe(true)
    expect((error as Error).message).toMatch(/has no prompt token ids; use a server that returns them/)
  })

  it('falls back to the tokenizer: exact for the completion, the chat template for the prompt', async () => {
    const tokenizer = createByteTokenizer()
    const server = await serve(createSeededPolicy('seeded'), { tokenizer }) // token strings are text now
    const remote = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'seeded', returnTokenIds: false, tokenizer })
    const [completion] = await remote.generate([request('héllo')])
    const [expected] = await createSeededPolicy().generate([request('héllo')])
    expect(completion!.tokenIds).toEqual(expected!.tokenIds)
    expect(completion!.logprobs).toEqual(expected!.logprobs)
    // The template is encoded without special tokens (chat templates carry their own), as the policy did.
    expect(completion!.promptTokenIds).toEqual(expected!.promptTokenIds)

    const none = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'seeded', returnTokenIds: false })
    expect(ParseError.isInstance(await onlyError(none.generate([request('x')])))).toBe(true)
    const lenient = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'seeded', returnTokenIds: false, requireTokenIds: false })
    const [textOnly] = await lenient.generate([request('x')])
    expect(textOnly).toEqual({
      text: expected!.text,
      promptTokenIds: new Int32Array(0),
      tokenIds: new Int32Array(0),
      logprobs: new Float32Array(0),
      finishReason: 'stop',
    })
  })

  it('sends a raw prompt to /v1/completions (continued as it is) beside chats, with ids from the server, the token strings or the tokenizer', async () => {
    const tokenizer = createByteTokenizer()
    const served = createSeededPolicy('seeded')
    const server = await serve(served)
    const remote = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'seeded' })
    const requests: GenerationRequest[] = [{ prompt: 'user: raw\nassistant:', maxTokens: 16, seed: 5, stop: ['\n'] }, request('chat', { seed: 5 })]
    const completions = await remote.generate(requests)
    expect(completions).toEqual(await createSeededPolicy().generate(requests))
    expect(completions[0]!.promptTokenIds).toEqual(tokenizer.encode('user: raw\nassistant:')) // as a local model: BOS added
    expect(served.requests).toEqual(requests)

    const stringsOnly = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'seeded', returnTokenIds: false, requireTokenIds: false })
    const [fromStrings] = await stringsOnly.generate([requests[0]!])
    expect([fromStrings!.tokenIds, fromStrings!.logprobs, fromStrings!.promptTokenIds]).toEqual([
      completions[0]!.tokenIds,
      completions[0]!.logprobs,
      new Int32Array(0),
    ])
    const withTokenizer = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'seeded', returnTokenIds: false, tokenizer })
    const [fromTokenizer] = await withTokenizer.generate([requests[0]!])
    expect(fromTokenizer!.promptTokenIds).toEqual(tokenizer.encode('user: raw\nassistant:'))
  })

  it('keeps at most `concurrency` requests in flight and answers all of them', async () => {
    const served = createSeededPolicy('seeded')
    const server = await serve(served)
    const remote = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'seeded', concurrency: 4 })
    const requests = Array.from({ length: 32 }, (_, index) => request(`#${index}`, { seed: index }))
    const completions = await remote.generate(requests)
    expect(completions).toEqual(await createSeededPolicy().generate(requests))
    const stats = server.stats()
    expect(stats.requests).toBe(32)
    expect(stats.largestBatch).toBeLessThanOrEqual(4) // the server never saw more than 4 at once
  })

  it('surfaces 4xx answers as RemotePolicyErrors without retrying', async () => {
    const served = createSeededPolicy('seeded')
    const server = await serve(served)
    const remote = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'seeded', ...fast })
    const results = await remote.generate([request('fine'), request('too hot', { temperature: 3 })]).catch((error: unknown) => error)
    expect(GenerationBatchError.isInstance(results)).toBe(true)
    const batch = results as GenerationBatchError
    expect(batch.completions[0]?.text).toMatch(/^I pick/)
    expect(batch.completions[1]).toBeUndefined()
    const error = batch.errors[1] as RemotePolicyError
    expect(RemotePolicyError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({
      kind: 'http',
      status: 400,
      param: 'temperature',
      code: 'invalid_value',
      type: 'invalid_request_error',
      attempts: 1,
      retryable: false,
      policyId: 'seeded',
    })
    expect(error.message).toMatch(/POST http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions HTTP 400 after 1 attempt \(param 'temperature'\)/)
    expect(served.requests).toHaveLength(1)

    const wrongModel = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'other', ...fast })
    expect(await onlyError(wrongModel.generate([request('x')]))).toMatchObject({ status: 404, code: 'model_not_found', attempts: 1 })
  })

  it('retries a failing server with backoff and succeeds', async () => {
    let calls = 0
    const inner = createSeededPolicy('flaky')
    const flaky: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'flaky',
      generate: (requests) => (++calls <= 2 ? Promise.reject(new LudicError('warming up')) : inner.generate(requests)),
    }
    const server = await serve(flaky)
    const remote = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'flaky', maxRetries: 2, ...fast })
    const [completion] = await remote.generate([request('x', { seed: 1 })])
    expect(completion).toEqual((await createSeededPolicy().generate([request('x', { seed: 1 })]))[0])
    expect(server.stats().requests).toBe(3)

    const once = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'flaky', maxRetries: 1, ...fast })
    calls = 0
    const error = await onlyError(once.generate([request('x')]))
    expect(error).toMatchObject({ kind: 'http', status: 500, type: 'server_error', attempts: 2, retryable: true })
    expect((error as Error).message).toMatch(/The policy failed: LudicError: warming up/)
  })

  it('times out each attempt, retries, then reports a timeout', async () => {
    const gated = createGatedPolicy()
    const server = await serve(gated, { batching: { windowMs: 0, maxConcurrentBatches: 4 } })
    const remote = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'gated', timeoutMs: 100, maxRetries: 1, ...fast })
    const error = await onlyError(remote.generate([request('x')]))
    expect(RemotePolicyError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ kind: 'timeout', status: undefined, attempts: 2, retryable: true })
    expect(gated.calls).toBe(2)
  })

  it('retries when the server is killed mid-request, then reports the connection failure', async () => {
    const gated = createGatedPolicy()
    const server = await serve(gated)
    const remote = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'gated', timeoutMs: 10_000, maxRetries: 2, ...fast })
    const pending = onlyError(remote.generate([request('x')]))
    await waitFor(() => gated.calls > 0)
    await server.close()
    const error = await pending
    expect(RemotePolicyError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ kind: 'connection', attempts: 3, retryable: true })
    expect(gated.calls).toBe(1) // the retries found no server
  })

  it('honours retry-after and x-should-retry, and reports malformed answers as ParseErrors', async () => {
    const answers: Response[] = []
    let calls = 0
    const fakeFetch = (async () => {
      calls++
      return answers.shift()!
    }) as typeof fetch
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
      new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })
    const remote = createOpenAICompatiblePolicy({
      baseURL: 'http://127.0.0.1:9/v1',
      model: 'm',
      fetch: fakeFetch,
      maxRetries: 3,
      retryDelayMs: 60_000,
      maxRetryDelayMs: 60_000,
    })
    const ok = {
      choices: [
        {
          message: { content: 'hi' },
          finish_reason: 'length',
          logprobs: {
            content: [
              { token: 'h', logprob: -1 },
              { token: 'i', logprob: -2 },
            ],
          },
          token_ids: [104, 105],
        },
      ],
      prompt_token_ids: [1],
    }

    answers.push(json(429, { error: { message: 'slow down', type: 'rate_limit', param: null, code: null } }, { 'retry-after-ms': '1' }), json(200, ok))
    const [completion] = await remote.generate([request('x')]) // a 60 s backoff would time the test out
    expect(completion).toEqual({
      text: 'hi',
      promptTokenIds: Int32Array.of(1),
      tokenIds: Int32Array.of(104, 105),
      logprobs: Float32Array.of(-1, -2),
      finishReason: 'length',
    })
    expect(calls).toBe(2)

    answers.push(json(503, { error: { message: 'no', type: 'server_error', param: null, code: null } }, { 'x-should-retry': 'false' }))
    expect(await onlyError(remote.generate([request('x')]))).toMatchObject({ status: 503, attempts: 1, retryable: false })

    answers.push(json(200, { choices: [] }))
    const malformed = await onlyError(remote.generate([request('x')]))
    expect(ParseError.isInstance(malformed)).toBe(true)
    expect((malformed as Error).message).toMatch(/Cannot parse the answer of http:\/\/127\.0\.0\.1:9\/v1\/chat\/completions at choices: has no choices/)

    answers.push(json(200, { ...ok, choices: [{ ...ok.choices[0], token_ids: [104] }] }))
    expect(((await onlyError(remote.generate([request('x')]))) as Error).message).toMatch(/has 2 log-probs for 1 token ids/)
  })

  it('checks its options', () => {
    expect(() => createOpenAICompatiblePolicy({ baseURL: 'not a url', model: 'm' })).toThrow(/options.baseURL/)
    expect(() => createOpenAICompatiblePolicy({ baseURL: 'http://127.0.0.1:1/v1', model: '' })).toThrow(InvalidArgumentError)
    expect(() => createOpenAICompatiblePolicy({ baseURL: 'http://127.0.0.1:1/v1', model: 'm', concurrency: 0 })).toThrow(/options.concurrency/)
    expect(() => createOpenAICompatiblePolicy({ baseURL: 'http://127.0.0.1:1/v1', model: 'm', maxRetries: -1 })).toThrow(/options.maxRetries/)
  })
})

describe('collect with a remote policy', () => {
  it('reports the episodes whose requests failed and completes the others, identical to a local run', async () => {
    const inner = createSeededPolicy('walker')
    const cursed: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'walker',
      async generate(requests) {
        const completions = await inner.generate(requests)
        const errors = requests.map((r) => (requestEpisodeSeed(r) === 3 ? new LudicError('seed 3 is cursed') : undefined))
        if (errors.every((error) => error === undefined)) return completions
        throw new GenerationBatchError({ policyId: 'walker', completions: completions.map((c, i) => (errors[i] ? undefined : c)), errors })
      },
    }
    const server = await serve(cursed)
    const remote = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'walker', maxRetries: 1, ...fast })
    const options = { environments: [() => createRandomWalk()], seeds: [1, 2, 3, 4], groupSize: 2, maxTurns: 8, concurrency: 8 }
    const { trajectories, samples, failures } = await collect({ ...options, policies: remote })

    expect(failures.map((failure) => failure.trajectoryId)).toEqual(['random-walk-v1/3/0', 'random-walk-v1/3/1'])
    expect(failures[0]).toMatchObject({ stage: 'generate', turnIndex: 0, policyId: 'walker' })
    expect(failures[0]?.message).toMatch(/RemotePolicyError: .*HTTP 500 after 2 attempts: .*seed 3 is cursed/)
    expect(RemotePolicyError.isInstance(failures[0]?.error)).toBe(true)

    const local = await collect({ ...options, policies: createSeededPolicy('walker') })
    const succeeded = trajectories.filter((trajectory) => trajectory.error === undefined)
    expect(succeeded).toHaveLength(6)
    expect(succeeded).toEqual(local.trajectories.filter((trajectory) => trajectory.seed !== 3))
    expect(samples).toEqual(local.samples.filter((sample) => !sample.groupId.endsWith('/3')))
  })
})
