import { BackendError, InvalidArgumentError, LudicError, type GenerateOptions, type GenerationRequest, type PolicyV1 } from '@ludic/core'
import { createByteTokenizer, createScriptedPolicy } from '@ludic/core/test'
import OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { serveOpenAICompatible, type OpenAICompatibleServer, type ServeOptions } from './openai-compatible-server.js'
import { waitFor } from './test/episodes.js'

// Faults of the policy behind the server: refused requests, slow generations, clients that leave, a broken backend.
const servers: OpenAICompatibleServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

async function serve(policy: PolicyV1, options: ServeOptions = {}) {
  const server = await serveOpenAICompatible(policy, options)
  servers.push(server)
  return server
}

const echo = () => createScriptedPolicy({ id: 'echo', replies: (request: GenerationRequest) => `echo: ${request.messages!.at(-1)!.content}` })
const chat = (content = 'hi', extra: Record<string, unknown> = {}) => ({ model: 'echo', messages: [{ role: 'user', content }], ...extra })
const post = (server: OpenAICompatibleServer, body: unknown, init: RequestInit = {}) =>
  fetch(`${server.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), ...init })
const errorOf = async (response: Response) =>
  ((await response.json()) as { error: { message: string; type: string; param: string | null; code: string | null } }).error
const health = (server: OpenAICompatibleServer) => fetch(server.url.replace('/v1', '/health'))

/** What `@ludic/model`'s createLocalPolicy throws for a prompt past the context: an InvalidArgumentError marked as a ContextLengthError. */
function contextLengthError(requested: number, limit: number): InvalidArgumentError {
  const error = new InvalidArgumentError({
    argument: 'requests[0].maxTokens',
    value: requested,
    message: `${requested} positions, past the model's context of ${limit} tokens`,
  })
  return Object.assign(error, { [Symbol.for('ludic.error.ContextLengthError')]: true, limit, requested })
}

/** A policy that works `stepMs` per step for `steps` steps, checking its signal between steps as a local model does. */
function createSlowPolicy(steps: number, stepMs = 20): PolicyV1 & { signals: AbortSignal[]; finished: number } {
  const inner = echo()
  const policy = {
    specificationVersion: 'v1' as const,
    id: 'echo',
    signals: [] as AbortSignal[],
    finished: 0,
    async generate(requests: readonly GenerationRequest[], options: GenerateOptions = {}) {
      if (options.signal !== undefined) policy.signals.push(options.signal)
      for (let step = 0; step < steps; step++) {
        options.signal?.throwIfAborted()
        await new Promise((resolve) => setTimeout(resolve, stepMs))
      }
      policy.finished++
      return inner.generate(requests)
    },
  }
  return policy
}

describe('serveOpenAICompatible under faults', () => {
  it('refuses prompt + max_tokens past maxContextTokens with a 400 before the policy is called', async () => {
    const policy = echo()
    const server = await serve(policy, { maxContextTokens: 64, tokenizer: createByteTokenizer() })
    const long = await post(server, chat('x'.repeat(21_000), { max_tokens: 1 }))
    expect(long.status).toBe(400)
    const error = await errorOf(long)
    expect(error).toMatchObject({ type: 'invalid_request_error', code: 'context_length_exceeded', param: 'messages' })
    expect(error.message).toMatch(
      /maximum context length is 64 tokens \(the maxContextTokens option.*you requested 21\d\d\d tokens \(21\d\d\d in the messages, 1 in the completion\)/,
    )
    const huge = await post(server, chat('hi', { max_tokens: 1e9 }))
    expect(huge.status).toBe(400)
    expect((await errorOf(huge)).message).toMatch(/1000000000 in the completion/)
    expect(policy.requests).toHaveLength(0)
    expect((await post(server, chat('hi', { max_tokens: 8 }))).status).toBe(200)

    // Without a tokenizer, max_tokens alone is checked.
    const counting = await serve(echo(), { maxContextTokens: 64 })
    expect((await errorOf(await post(counting, chat('hi', { max_tokens: 65 })))).code).toBe('context_length_exceeded')
    expect((await post(counting, chat('hi', { max_tokens: 64 }))).status).toBe(200)
  })

  it("answers 400 to the policy's InvalidArgumentError (context_length_exceeded for a ContextLengthError), failing only that request of a batch", async () => {
    const inner = echo()
    const calls: number[] = []
    const picky: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'echo',
      async generate(requests) {
        calls.push(requests.length)
        // Like createLocalPolicy: every request is checked before anything is generated, and one bad one refuses the batch.
        for (const request of requests) {
          const content = request.messages!.at(-1)!.content
          if (content.length > 100) throw contextLengthError(content.length, 100)
          if (content === 'bad') throw new InvalidArgumentError({ argument: 'requests[0]', value: content, message: 'is bad' })
        }
        return inner.generate(requests)
      },
    }
    const server = await serve(picky, { batching: { windowMs: 60_000, maxBatchSize: 4 } }) // the batch goes when the fourth arrives, however slowly they come
    const [good, long, bad, alsoGood] = await Promise.all([
      post(server, chat('a')),
      post(server, chat('y'.repeat(500))),
      post(server, chat('bad')),
      post(server, chat('b')),
    ])
    expect(calls[0]).toBe(4) // one batch, refused as a whole, then one request at a time
    expect(good!.status).toBe(200)
    expect(alsoGood!.status).toBe(200)
    expect(long!.status).toBe(400)
    expect(await errorOf(long!)).toMatchObject({ type: 'invalid_request_error', code: 'context_length_exceeded' })
    expect(bad!.status).toBe(400)
    expect(await errorOf(bad!)).toMatchObject({ type: 'invalid_request_error', code: 'invalid_value', message: expect.stringMatching(/is bad/) })
  })

  it('aborts a generation past generationTimeoutMs (504, not to be retried) and passes the abort to the policy', async () => {
    const policy = createSlowPolicy(1_000)
    const server = await serve(policy, { generationTimeoutMs: 200 })
    const response = await post(server, chat()) // the policy would answer 200 after 1 s: a 504 is the deadline's doing
    expect(response.status).toBe(504)
    expect(response.headers.get('x-should-retry')).toBe('false')
    expect(await errorOf(response)).toMatchObject({ type: 'server_error', code: 'generation_timeout' })
    expect(policy.signals[0]?.aborted).toBe(true)
    const client = new OpenAI({ baseURL: server.url, apiKey: 'EMPTY', maxRetries: 2 })
    await expect(client.chat.completions.create(chat() as OpenAI.ChatCompletionCreateParamsNonStreaming)).rejects.toMatchObject({ status: 504 })
    expect(policy.signals).toHaveLength(2) // the SDK did not retry
    expect((await health(server)).status).toBe(200)
  })

  it('aborts the generation of a client that disconnects (unless others share its batch), and keeps serving', async () => {
    const policy = createSlowPolicy(1_000)
    const server = await serve(policy)
    const gone = new AbortController()
    const pending = post(server, chat(), { signal: gone.signal }).catch((error: unknown) => error)
    await waitFor(() => policy.signals.length === 1)
    gone.abort()
    await pending
    await waitFor(() => policy.signals[0]!.aborted)

    // Two clients in one batch: one leaves, the other still gets its answer.
    const shared = createSlowPolicy(10)
    const both = await serve(shared, { batching: { windowMs: 60_000, maxBatchSize: 2 } }) // one batch of the two, however slowly they come
    const leaving = new AbortController()
    const leaver = post(both, chat('leaver'), { signal: leaving.signal }).catch((error: unknown) => error)
    const stayer = post(both, chat('stayer'))
    await waitFor(() => shared.signals.length === 1)
    leaving.abort()
    await leaver
    const answer = await stayer
    expect(answer.status).toBe(200)
    expect(((await answer.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe('echo: stayer')
    expect(shared.signals[0]!.aborted).toBe(false)
    expect(both.stats().requests).toBe(2)
  })

  it.each([
    [
      'a WebAssembly RuntimeError',
      () =>
        new (globalThis as unknown as { WebAssembly: { RuntimeError: new (message: string) => Error } }).WebAssembly.RuntimeError(
          'memory access out of bounds',
        ),
    ],
    ['a BackendError', () => new BackendError({ backend: 'wasm', message: 'Aborted()' })],
    ['an error the policy marks fatal', () => Object.assign(new LudicError('the device is lost'), { fatal: true })],
  ])('turns unhealthy after %s: /health 503, onFatalError called once, later requests 503 without touching the policy', async (_, fault) => {
    let calls = 0
    const fatalErrors: unknown[] = []
    const broken: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'echo',
      generate: async () => {
        calls++
        throw fault()
      },
    }
    const server = await serve(broken, { onFatalError: (error) => fatalErrors.push(error) })
    expect((await health(server)).status).toBe(200)
    const first = await post(server, chat())
    expect(first.status).toBe(500)
    expect((await errorOf(first)).message).toMatch(/unhealthy/)
    const answer = await health(server)
    expect(answer.status).toBe(503)
    expect(await answer.json()).toMatchObject({ status: 'unhealthy', error: expect.stringMatching(/./) })
    for (let index = 0; index < 3; index++) {
      const later = await post(server, chat())
      expect(later.status).toBe(503)
      expect(await errorOf(later)).toMatchObject({ type: 'server_error', code: 'server_unhealthy' })
    }
    expect(calls).toBe(1)
    expect(fatalErrors).toHaveLength(1)
    expect(server.health()).toMatchObject({ healthy: false })
  })

  it('stays healthy after errors that are not fatal', async () => {
    const failing: PolicyV1 = { specificationVersion: 'v1', id: 'echo', generate: () => Promise.reject(new LudicError('out of luck')) }
    const server = await serve(failing)
    expect((await post(server, chat())).status).toBe(500)
    expect((await post(server, chat())).status).toBe(500)
    expect((await health(server)).status).toBe(200)
    expect(server.health()).toEqual({ healthy: true })
  })
})
