import type { GenerateOptions, GenerationRequest, PolicyV1 } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { serveOpenAICompatible, type OpenAICompatibleServer, type ServeOptions } from './openai-compatible-server.js'
import { waitFor } from './test/episodes.js'

// Streaming (server-sent events in OpenAI's chunk format), read with the official openai SDK over loopback.
const servers: OpenAICompatibleServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

async function serve(policy: PolicyV1, options: ServeOptions = {}) {
  const server = await serveOpenAICompatible(policy, options)
  servers.push(server)
  return server
}

const echo = () =>
  createScriptedPolicy({
    id: 'echo',
    replies: (request: GenerationRequest) => ({
      text: `echo: ${request.prompt ?? request.messages!.at(-1)!.content}`,
      finishReason: request.maxTokens < 10 ? 'length' : 'stop',
    }),
  })

/** Streams each reply word by word through onText, waiting for `gate` (when given) after the first word. */
function createStreamingEcho(gate?: Promise<void>): PolicyV1 {
  const inner = echo()
  return {
    specificationVersion: 'v1',
    id: 'echo',
    async generate(requests: readonly GenerationRequest[], options: GenerateOptions = {}) {
      const completions = await inner.generate(requests)
      const words = completions.map((completion) => completion.text.split(/(?<= )/))
      for (let step = 0; words.some((pieces) => step < pieces.length); step++) {
        words.forEach((pieces, index) => (step < pieces.length ? options.onText?.(index, pieces[step]!) : undefined))
        if (step === 0 && gate !== undefined) await gate
      }
      return completions
    },
  }
}

const client = (server: OpenAICompatibleServer) => new OpenAI({ baseURL: server.url, apiKey: 'EMPTY', maxRetries: 0 })
const question = (content: string) => [{ role: 'user' as const, content }]

describe('serveOpenAICompatible streaming', () => {
  it('streams chat completions as chat.completion.chunk events: role, content deltas, finish_reason, usage last, [DONE]', async () => {
    const server = await serve(createStreamingEcho())
    const openai = client(server)
    const body = { model: 'echo', messages: question('one two three'), max_tokens: 20, n: 2, seed: 1 }
    const whole = await openai.chat.completions.create(body)
    const stream = await openai.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } })
    const chunks: OpenAI.ChatCompletionChunk[] = []
    for await (const chunk of stream) chunks.push(chunk)
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk' && chunk.model === 'echo' && chunk.id === chunks[0]!.id)).toBe(true)
    expect(chunks[0]!.id).toMatch(/^chatcmpl-/)
    for (const index of [0, 1]) {
      const mine = chunks.flatMap((chunk) => chunk.choices.filter((choice) => choice.index === index))
      expect(mine[0]!.delta).toEqual({ role: 'assistant', content: '' })
      expect(mine.map((choice) => choice.delta.content ?? '').join('')).toBe(whole.choices[index]!.message.content)
      expect(mine.filter((choice) => choice.delta.content).length).toBe(4) // word by word: 'echo: ', 'one ', 'two ', 'three'
      expect(mine.at(-1)!.finish_reason).toBe('stop')
      expect(mine.slice(0, -1).every((choice) => choice.finish_reason === null)).toBe(true)
    }
    const last = chunks.at(-1)!
    expect(last.choices).toEqual([])
    expect(last.usage).toEqual(whole.usage)
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage == null)).toBe(true)

    // Without include_usage, no usage chunk; the SDK's stream helper rebuilds the whole answer.
    const plain = await openai.chat.completions.create({ ...body, n: 1, stream: true })
    const received: OpenAI.ChatCompletionChunk[] = []
    for await (const chunk of plain) received.push(chunk)
    expect(received.every((chunk) => chunk.choices.length === 1 && chunk.usage == null)).toBe(true)
    const final = await openai.chat.completions.stream({ ...body, n: 1 }).finalChatCompletion()
    expect(final.choices[0]!.message.content).toBe('echo: one two three')
    expect(final.choices[0]!.finish_reason).toBe('stop')
  })

  it('sends text as the policy produces it, before the generation ends', async () => {
    let open!: () => void
    const gate = new Promise<void>((resolve) => (open = resolve))
    const server = await serve(createStreamingEcho(gate))
    const stream = await client(server).chat.completions.create({ model: 'echo', messages: question('slow words here'), stream: true })
    const iterator = stream[Symbol.asyncIterator]()
    expect((await iterator.next()).value.choices[0].delta).toEqual({ role: 'assistant', content: '' })
    expect((await iterator.next()).value.choices[0].delta.content).toBe('echo: ') // while the policy still waits at the gate
    open()
    let rest = ''
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest += next.value.choices[0]?.delta.content ?? ''
    expect(rest).toBe('slow words here')
  })

  it("streams a policy that never calls onText as one content chunk at the end, with logprobs and token ids in each choice's last chunk", async () => {
    const server = await serve(echo())
    const openai = client(server)
    const body = { model: 'echo', messages: question('quiet'), max_tokens: 20, logprobs: true, return_token_ids: true }
    const whole = (await openai.chat.completions.create(body)) as OpenAI.ChatCompletion & { prompt_token_ids: number[]; choices: { token_ids: number[] }[] }
    const chunks: (OpenAI.ChatCompletionChunk & { prompt_token_ids?: number[]; choices: { token_ids?: number[] }[] })[] = []
    for await (const chunk of await openai.chat.completions.create({ ...body, stream: true })) chunks.push(chunk)
    expect(chunks.map((chunk) => chunk.choices[0]!.delta.content ?? null)).toEqual(['', 'echo: quiet', null])
    const last = chunks.at(-1)!.choices[0]!
    expect(last.finish_reason).toBe('stop')
    expect(last.logprobs?.content).toEqual(whole.choices[0]!.logprobs!.content)
    expect(last.token_ids).toEqual(whole.choices[0]!.token_ids)
    expect(chunks.at(-1)!.prompt_token_ids).toEqual(whole.prompt_token_ids) // known at the end, with the first choice's last chunk
  })

  it('streams /v1/completions as text_completion chunks, n per prompt, with usage last', async () => {
    const server = await serve(createStreamingEcho())
    const openai = client(server)
    const body = { model: 'echo', prompt: ['a b', 'c d'], n: 2, max_tokens: 5 }
    const whole = await openai.completions.create(body)
    const chunks: OpenAI.Completion[] = []
    for await (const chunk of await openai.completions.create({ ...body, stream: true, stream_options: { include_usage: true } })) chunks.push(chunk)
    expect(chunks.every((chunk) => chunk.object === 'text_completion')).toBe(true)
    for (const index of [0, 1, 2, 3]) {
      const mine = chunks.flatMap((chunk) => chunk.choices.filter((choice) => choice.index === index))
      expect(mine.map((choice) => choice.text).join('')).toBe(whole.choices[index]!.text)
      expect(mine.at(-1)!.finish_reason).toBe('length')
    }
    expect(chunks.at(-1)!.usage).toEqual(whole.usage)
  })

  it('reports a failure after the stream has started as an error event, which the SDK raises', async () => {
    const failing: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'echo',
      async generate(_, options = {}) {
        options.onText?.(0, 'partial ')
        throw new Error('the backend fell over')
      },
    }
    const server = await serve(failing)
    const stream = await client(server).chat.completions.create({ model: 'echo', messages: question('x'), stream: true })
    const contents: string[] = []
    const error = await (async () => {
      for await (const chunk of stream) contents.push(chunk.choices[0]?.delta.content ?? '')
    })().catch((caught: unknown) => caught)
    expect(contents).toEqual(['', 'partial '])
    expect(error).toBeInstanceOf(OpenAI.APIError)
    expect((error as Error).message).toMatch(/The policy failed: Error: the backend fell over/)

    // Errors found before the stream starts are plain JSON answers, as without streaming.
    const refused = await client(server)
      .chat.completions.create({ model: 'echo', messages: [], stream: true })
      .catch((caught: unknown) => caught)
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError)
  })

  it('aborts the generation when a streaming client leaves', async () => {
    const signals: AbortSignal[] = []
    const endless: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'echo',
      async generate(_, options = {}) {
        signals.push(options.signal!)
        for (;;) {
          options.signal?.throwIfAborted()
          options.onText?.(0, 'more ')
          await new Promise((resolve) => setTimeout(resolve, 10))
        }
      },
    }
    const server = await serve(endless)
    const stream = await client(server).chat.completions.create({ model: 'echo', messages: question('x'), stream: true })
    let received = 0
    for await (const _ of stream) if (++received === 5) break // leaves: the SDK aborts the request
    await waitFor(() => signals[0]?.aborted === true)
    expect((await fetch(server.url.replace('/v1', '/health'))).status).toBe(200)
  })
})
