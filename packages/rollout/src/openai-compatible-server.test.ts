import { deriveSeed, LudicError, requestMessages, type GenerationRequest, type PolicyV1 } from '@ludic/core'
import { createByteTokenizer, createScriptedPolicy, type ScriptedPolicy } from '@ludic/core/test'
import { request as httpRequest } from 'node:http'
import OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { serveOpenAICompatible, type OpenAICompatibleServer } from './openai-compatible-server.js'
import { waitFor } from './test/episodes.js'

const servers: OpenAICompatibleServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

/** Echoes the last message; log-probs −(i + 1)/8 per token; 'length' when maxTokens is below 10. */
function createEcho(): ScriptedPolicy {
  return createScriptedPolicy({
    id: 'echo',
    replies: (request: GenerationRequest) => {
      const text = `echo: ${request.prompt ?? request.messages!.at(-1)!.content}`
      return {
        text,
        logprobs: Array.from(new TextEncoder().encode(text), (_, index) => -(index + 1) / 8),
        finishReason: request.maxTokens < 10 ? 'length' : 'stop',
      }
    },
  })
}

async function serve(policy: PolicyV1, options: Parameters<typeof serveOpenAICompatible>[1] = {}) {
  const server = await serveOpenAICompatible(policy, options)
  servers.push(server)
  return server
}

const post = (server: OpenAICompatibleServer, path: string, body: unknown) =>
  fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })

describe('serveOpenAICompatible', () => {
  it('listens on loopback with an ephemeral port and lists its model', async () => {
    const server = await serve(createEcho(), { modelId: 'ludic-echo' })
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/)
    const client = new OpenAI({ baseURL: server.url, apiKey: 'EMPTY', maxRetries: 0 })
    const models = await client.models.list()
    expect(models.data.map((model) => model.id)).toEqual(['ludic-echo'])
    expect((await client.models.retrieve('ludic-echo')).owned_by).toBe('ludic')
    await expect(client.models.retrieve('gpt-9')).rejects.toBeInstanceOf(OpenAI.NotFoundError)
    expect((await fetch(server.url.replace('/v1', '/health'))).status).toBe(200)
  })

  it('answers chat completions with logprobs, usage, token ids and n seeded choices', async () => {
    const policy = createEcho()
    const server = await serve(policy)
    const client = new OpenAI({ baseURL: server.url, apiKey: 'EMPTY', maxRetries: 0 })
    const body = {
      model: 'echo',
      messages: [
        { role: 'developer' as const, content: 'be brief' },
        {
          role: 'user' as const,
          content: [
            { type: 'text' as const, text: 'héllo' },
            { type: 'text' as const, text: 'there' },
          ],
        },
      ],
      max_completion_tokens: 5,
      temperature: 0.7,
      top_p: 0.9,
      stop: 'END',
      seed: 42,
      n: 3,
      logprobs: true,
      top_logprobs: 2,
      top_k: 20,
      return_token_ids: true,
    }
    const answer = (await client.chat.completions.create(body)) as OpenAI.ChatCompletion & { prompt_token_ids: number[]; choices: { token_ids: number[] }[] }
    expect(policy.requests).toHaveLength(3)
    expect(policy.requests[0]).toEqual({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'héllo\nthere' },
      ],
      maxTokens: 5,
      temperature: 0.7,
      topP: 0.9,
      topK: 20,
      stop: ['END'],
      seed: 42,
    })
    expect(policy.requests.map((request) => request.seed)).toEqual([42, deriveSeed(42, 1), deriveSeed(42, 2)])

    const [direct] = await createEcho().generate([policy.requests[0]!])
    expect(answer.object).toBe('chat.completion')
    expect(answer.model).toBe('echo')
    expect(answer.choices.map((choice) => choice.index)).toEqual([0, 1, 2])
    const choice = answer.choices[0]!
    expect(choice.message).toMatchObject({ role: 'assistant', content: 'echo: héllo\nthere' })
    expect(choice.finish_reason).toBe('length')
    expect(choice.token_ids).toEqual(Array.from(direct!.tokenIds))
    expect(answer.prompt_token_ids).toEqual(Array.from(direct!.promptTokenIds))
    const content = choice.logprobs!.content!
    expect(content.map((token) => token.logprob)).toEqual(Array.from(direct!.logprobs))
    expect(content[0]).toEqual({
      token: `token_id:${direct!.tokenIds[0]}`,
      logprob: -0.125,
      bytes: null,
      top_logprobs: [{ token: `token_id:${direct!.tokenIds[0]}`, logprob: -0.125, bytes: null }],
    })
    expect(answer.usage).toEqual({
      prompt_tokens: direct!.promptTokenIds.length,
      completion_tokens: 3 * direct!.tokenIds.length,
      total_tokens: direct!.promptTokenIds.length + 3 * direct!.tokenIds.length,
    }) // the prompt counts once

    const plain = await client.chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: 'hi' }] })
    expect(plain.choices[0]!.logprobs).toBeNull()
    expect('token_ids' in plain.choices[0]!).toBe(false)
    expect(policy.requests.at(-1)).toEqual({ messages: [{ role: 'user', content: 'hi' }], maxTokens: 256 })
  })

  it('renders token strings with a tokenizer when given one', async () => {
    const server = await serve(createEcho(), { tokenizer: createByteTokenizer() })
    const client = new OpenAI({ baseURL: server.url, apiKey: 'EMPTY', maxRetries: 0 })
    const answer = await client.chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: 'ok' }], logprobs: true })
    expect(answer.choices[0]!.logprobs!.content!.map((token) => token.token).join('')).toBe('echo: ok')
    expect(answer.choices[0]!.logprobs!.content![0]!.bytes).toEqual([101])
  })

  it('serves /v1/completions as raw text to continue (a GenerationRequest prompt, no chat template), n choices each, in order', async () => {
    const policy = createEcho()
    const server = await serve(policy)
    const client = new OpenAI({ baseURL: server.url, apiKey: 'EMPTY', maxRetries: 0 })
    const answer = await client.completions.create({ model: 'echo', prompt: ['one', 'two'], n: 2, max_tokens: 20, logprobs: 1, seed: 3 })
    expect(answer.choices.map((choice) => [choice.index, choice.text])).toEqual([
      [0, 'echo: one'],
      [1, 'echo: one'],
      [2, 'echo: two'],
      [3, 'echo: two'],
    ])
    expect(policy.requests.map((request) => [request.prompt, request.messages, request.seed])).toEqual([
      ['one', undefined, 3],
      ['one', undefined, deriveSeed(3, 1)],
      ['two', undefined, 3],
      ['two', undefined, deriveSeed(3, 1)],
    ])
    const logprobs = answer.choices[0]!.logprobs!
    expect(logprobs.token_logprobs?.slice(0, 2)).toEqual([-0.125, -0.25])
    expect(logprobs.top_logprobs?.[0]).toEqual({ [logprobs.tokens![0]!]: -0.125 })
    expect(answer.usage?.completion_tokens).toBe(4 * 'echo: one'.length)
  })

  it('answers a raw prompt with its ids as the policy encoded them (special tokens added), and a chat-only policy refuses it with 400', async () => {
    const server = await serve(createEcho(), { tokenizer: createByteTokenizer(), maxContextTokens: 64 })
    const body = { model: 'echo', prompt: 'user: hi', max_tokens: 20, return_token_ids: true }
    const answer = (await (await post(server, '/completions', body)).json()) as { choices: { prompt_token_ids: number[] }[] }
    expect(answer.choices[0]!.prompt_token_ids).toEqual(Array.from(createByteTokenizer().encode('user: hi')))
    // Counted as the policy encodes it: 1 BOS + 8 bytes + 56 = 65 > 64.
    const tooLong = await post(server, '/completions', { ...body, max_tokens: 56 })
    expect(tooLong.status).toBe(400)
    expect(await tooLong.json()).toMatchObject({
      error: { code: 'context_length_exceeded', param: 'prompt', message: expect.stringContaining('(9 in the prompt, 56') },
    })

    const chatOnly: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'chat-only',
      generate: async (requests) => createEcho().generate(requests.map((request, index) => ({ ...request, messages: requestMessages(request, index) }))),
    }
    const refusing = await serve(chatOnly)
    const refused = await post(refusing, '/completions', { model: 'chat-only', prompt: 'hi' })
    expect(refused.status).toBe(400)
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/requests\[0\]\.prompt.*continues chats only/)
  })

  it('batches concurrent requests into one generate call', async () => {
    const inner = createEcho()
    let server: OpenAICompatibleServer | undefined
    const sizes: number[] = []
    const gated: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'echo',
      async generate(requests) {
        sizes.push(requests.length)
        // Hold the first call until all 32 requests have arrived: they must then go as one more call.
        if (sizes.length === 1) await waitFor(() => server!.stats().requests === 32)
        return inner.generate(requests)
      },
    }
    server = await serve(gated)
    const client = new OpenAI({ baseURL: server.url, apiKey: 'EMPTY', maxRetries: 0 })
    const answers = await Promise.all(
      Array.from({ length: 32 }, (_, index) => client.chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: `#${index}` }] })),
    )
    expect(answers.map((answer) => answer.choices[0]!.message.content)).toEqual(Array.from({ length: 32 }, (_, index) => `echo: #${index}`))
    expect(sizes).toHaveLength(2)
    expect(sizes[0]! + sizes[1]!).toBe(32)
    expect(server.stats()).toMatchObject({ requests: 32, batches: 2, queued: 0, inFlightBatches: 0 })
  })

  describe('errors are OpenAI-shaped JSON', () => {
    const chat = { model: 'echo', messages: [{ role: 'user', content: 'hi' }] }
    const cases: [string, string, unknown, number, string | null, string | null][] = [
      ['broken JSON', '/chat/completions', '{"model": ', 400, null, 'invalid_json'],
      ['a missing model', '/chat/completions', { messages: chat.messages }, 400, 'model', 'missing_required_parameter'],
      ['missing messages', '/chat/completions', { model: 'echo' }, 400, 'messages', 'missing_required_parameter'],
      ['no messages', '/chat/completions', { ...chat, messages: [] }, 400, 'messages', 'invalid_value'],
      ['an unknown role', '/chat/completions', { ...chat, messages: [{ role: 'robot', content: 'x' }] }, 400, 'messages[0].role', 'invalid_value'],
      [
        'an image part',
        '/chat/completions',
        { ...chat, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] },
        400,
        'messages[0].content',
        'invalid_value',
      ],
      ['a temperature above 2', '/chat/completions', { ...chat, temperature: 2.5 }, 400, 'temperature', 'invalid_value'],
      ['a string max_tokens', '/chat/completions', { ...chat, max_tokens: '12' }, 400, 'max_tokens', 'invalid_type'],
      ['a stream that is not a boolean', '/chat/completions', { ...chat, stream: 'yes' }, 400, 'stream', 'invalid_type'],
      ['top_logprobs without logprobs', '/chat/completions', { ...chat, top_logprobs: 2 }, 400, 'top_logprobs', 'invalid_value'],
      ['n of 0', '/chat/completions', { ...chat, n: 0 }, 400, 'n', 'invalid_value'],
      ['a penalty', '/chat/completions', { ...chat, presence_penalty: 1 }, 400, 'presence_penalty', 'invalid_value'],
      ['a body that is not an object', '/chat/completions', '[1, 2]', 400, null, 'invalid_type'],
      ['an unknown model', '/chat/completions', { ...chat, model: 'gpt-9' }, 404, 'model', 'model_not_found'],
      ['token-id prompts', '/completions', { model: 'echo', prompt: [1, 2, 3] }, 400, 'prompt', 'invalid_value'],
      ['echo', '/completions', { model: 'echo', prompt: 'x', echo: true }, 400, 'echo', 'invalid_value'],
      ['an unknown route', '/embeddings', { model: 'echo', input: 'x' }, 404, null, 'unknown_url'],
      ['a wrong method', '/models', {}, 405, null, 'method_not_allowed'],
    ]
    it.each(cases)('%s', async (_, path, body, status, param, code) => {
      const server = await serve(createEcho())
      const response = await post(server, path, body)
      expect(response.status).toBe(status)
      expect(response.headers.get('content-type')).toBe('application/json')
      const answer = (await response.json()) as { error: { message: string; type: string; param: string | null; code: string | null } }
      expect(answer.error).toMatchObject({ type: 'invalid_request_error', param, code })
      expect(answer.error.message.length).toBeGreaterThan(10)
    })

    it('405 names the allowed method; 413 above the body limit; 500 when the policy fails', async () => {
      const failing: PolicyV1 = { specificationVersion: 'v1', id: 'echo', generate: () => Promise.reject(new LudicError('out of memory')) }
      const server = await serve(failing, { maxBodyBytes: 1024 })
      const get = await fetch(`${server.url}/chat/completions`)
      expect(get.status).toBe(405)
      expect(get.headers.get('allow')).toBe('POST')

      const huge = await post(server, '/chat/completions', { ...chat, messages: [{ role: 'user', content: 'x'.repeat(4096) }] })
      expect(huge.status).toBe(413)
      expect(((await huge.json()) as { error: { code: string } }).error.code).toBe('request_too_large')
      // A body of 2 MiB is read and dropped, so the client gets the answer, not a reset connection.
      const larger = await post(server, '/chat/completions', { ...chat, messages: [{ role: 'user', content: 'x'.repeat(2 * 1024 * 1024) }] })
      expect(larger.status).toBe(413)
      await larger.arrayBuffer()
      // Without a content-length (chunked), the limit applies while reading.
      const chunked = await new Promise<{ status: number | undefined; body: string }>((resolve, reject) => {
        const request = httpRequest(`${server.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (response) => {
          let body = ''
          response.on('data', (chunk: Buffer) => (body += chunk.toString()))
          response.on('end', () => resolve({ status: response.statusCode, body }))
        })
        request.on('error', reject)
        for (let index = 0; index < 3; index++) request.write('x'.repeat(600))
        request.end()
      })
      expect(chunked.status).toBe(413)
      expect(JSON.parse(chunked.body)).toMatchObject({ error: { code: 'request_too_large' } })

      const failed = await post(server, '/chat/completions', chat)
      expect(failed.status).toBe(500)
      expect(await failed.json()).toEqual({ error: { message: 'The policy failed: LudicError: out of memory', type: 'server_error', param: null, code: null } })
    })

    it('makes the openai SDK raise its typed errors', async () => {
      const server = await serve(createEcho())
      const client = new OpenAI({ baseURL: server.url, apiKey: 'EMPTY', maxRetries: 0 })
      const bad = await client.chat.completions.create({ model: 'echo', messages: [] }).catch((error: unknown) => error)
      expect(bad).toBeInstanceOf(OpenAI.BadRequestError)
      expect(bad).toMatchObject({ status: 400, param: 'messages', type: 'invalid_request_error', code: 'invalid_value' })
      expect(bad).toMatchObject({ requestID: expect.stringMatching(/^req-/) })
      const unknown = await client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }).catch((error: unknown) => error)
      expect(unknown).toBeInstanceOf(OpenAI.NotFoundError)
      expect(unknown).toMatchObject({ status: 404, param: 'model', code: 'model_not_found' })
    })
  })

  it('checks its arguments', async () => {
    await expect(serveOpenAICompatible({} as PolicyV1)).rejects.toThrow(/Invalid argument 'policy'/)
    await expect(serveOpenAICompatible(createEcho(), { port: -1 })).rejects.toThrow(/options.port/)
    await expect(serveOpenAICompatible(createEcho(), { batching: { windowMs: -1 } })).rejects.toThrow(/options.batching.windowMs/)
  })
})
