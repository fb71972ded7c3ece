import type { GenerationRequest, PolicyV1 } from '@ludic/core'
import { createScriptedPolicy, type ScriptedPolicy } from '@ludic/core/test'
import { connect, type Socket } from 'node:net'
import OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { serveOpenAICompatible, type OpenAICompatibleServer, type ServeOptions } from './openai-compatible-server.js'
import { waitFor } from './test/episodes.js'

// Input an attacker or an unlucky client sends: the server answers it, and stays up for the others.
const servers: OpenAICompatibleServer[] = []
const sockets: Socket[] = []
afterEach(async () => {
  sockets.splice(0).forEach((socket) => socket.destroy())
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

function createEcho(): ScriptedPolicy {
  return createScriptedPolicy({ id: 'echo', replies: (request: GenerationRequest) => `echo: ${request.prompt ?? request.messages!.at(-1)!.content}` })
}

async function serve(policy: PolicyV1, options: ServeOptions = {}) {
  const server = await serveOpenAICompatible(policy, options)
  servers.push(server)
  return server
}

const chat = { model: 'echo', messages: [{ role: 'user', content: 'hi' }] }
const post = (server: OpenAICompatibleServer, path: string, body: unknown, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  fetch(`${server.url}${path}`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) })
const errorOf = async (response: Response) =>
  ((await response.json()) as { error: { message: string; type: string; param: string | null; code: string | null } }).error

/** A raw TCP connection to the server, to send half a request; `closed` resolves with what came back when the server closes it. */
function rawConnection(server: OpenAICompatibleServer): { socket: Socket; closed: Promise<string>; isClosed: () => boolean } {
  const socket = connect(server.port, '127.0.0.1')
  sockets.push(socket)
  let text = ''
  let isClosed = false
  socket.on('data', (chunk: Buffer) => (text += chunk.toString()))
  socket.on('error', () => {})
  const closed = new Promise<string>((resolve) =>
    socket.on('close', () => {
      isClosed = true
      resolve(text)
    }),
  )
  return { socket, closed, isClosed: () => isClosed }
}

describe('serveOpenAICompatible limits', () => {
  it('with apiKey, answers 401 to a missing or wrong key (OpenAI-shaped, the SDK raises AuthenticationError); /health stays open', async () => {
    const policy = createEcho()
    const server = await serve(policy, { apiKey: 'sk-right' })
    const right = new OpenAI({ baseURL: server.url, apiKey: 'sk-right', maxRetries: 0 })
    expect((await right.chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: 'x' }] })).choices[0]!.message.content).toBe('echo: x')
    for (const apiKey of ['sk-wrong', 'sk-righ', 'sk-right-and-more', 'EMPTY']) {
      const wrong = new OpenAI({ baseURL: server.url, apiKey, maxRetries: 0 })
      const error = await wrong.chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: 'x' }] }).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError)
      expect(error).toMatchObject({ status: 401, code: 'invalid_api_key' })
      await expect(wrong.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError)
    }
    const missing = await post(server, '/chat/completions', chat)
    expect(missing.status).toBe(401)
    expect(await errorOf(missing)).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key' })
    expect((await fetch(server.url.replace('/v1', '/health'))).status).toBe(200)
    expect(policy.requests).toHaveLength(1)
  })

  it('serves POST bodies only as application/json: text/plain, forms and none get 415 (no CORS-simple request triggers generation)', async () => {
    const policy = createEcho()
    const server = await serve(policy)
    for (const headers of [
      { 'content-type': 'text/plain' },
      { 'content-type': 'application/x-www-form-urlencoded' },
      { 'content-type': 'multipart/form-data; boundary=x' },
      {},
    ]) {
      const response = await post(server, '/chat/completions', chat, headers)
      expect(response.status).toBe(415)
      expect(await errorOf(response)).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_media_type' })
    }
    expect(policy.requests).toHaveLength(0)
    expect((await post(server, '/chat/completions', chat, { 'content-type': 'application/json; charset=utf-8' })).status).toBe(200)
    expect((await post(server, '/chat/completions', chat, { 'content-type': 'Application/JSON' })).status).toBe(200)
  })

  it('answers 400 to malformed percent-encoding in the URL, and keeps serving', async () => {
    const server = await serve(createEcho())
    for (const path of ['/models/%E0%A4%A', '/models/%', '/models/%zz']) {
      const response = await fetch(`${server.url}${path}`)
      expect(response.status).toBe(400)
      expect(await errorOf(response)).toMatchObject({ type: 'invalid_request_error', code: 'invalid_url' })
    }
    expect((await fetch(`${server.url}/models/echo`)).status).toBe(200)
  })

  it('caps prompts × n per request (maxGenerationsPerRequest): 200 prompts × n 128 is a 400 naming the limit, before the policy is called', async () => {
    const policy = createEcho()
    const server = await serve(policy)
    const huge = await post(server, '/completions', { model: 'echo', prompt: Array.from({ length: 200 }, (_, index) => `p${index}`), n: 128, max_tokens: 4 })
    expect(huge.status).toBe(400)
    const error = await errorOf(huge)
    expect(error).toMatchObject({ type: 'invalid_request_error', code: 'too_many_generations', param: 'n' })
    expect(error.message).toMatch(/25600 generations \(200 prompts × n 128\).*limit is 128.*maxGenerationsPerRequest/)
    expect(policy.requests).toHaveLength(0)
    expect((await post(server, '/completions', { model: 'echo', prompt: ['a', 'b'], n: 64, max_tokens: 4 })).status).toBe(200)
    expect(policy.requests).toHaveLength(128)

    const strict = await serve(createEcho(), { maxGenerationsPerRequest: 4 })
    const five = await post(strict, '/chat/completions', { ...chat, n: 5 })
    expect(five.status).toBe(400)
    expect((await errorOf(five)).message).toMatch(/5 generations.*limit is 4/)
  })

  it('closes connections whose headers or body do not arrive in time (headersTimeoutMs, requestTimeoutMs), and keeps serving', async () => {
    const headersStart = 'POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n' // never ends the headers
    const bodyStart = `${headersStart}content-length: 1000\r\n\r\n{"model": ` // never ends the body
    // The same two half requests to a server with the defaults (10 s, 30 s): still open when the 300 ms and 600 ms
    // ones close, so they close by the options, not by Node's or Ludic's defaults. An order of events, not a duration.
    const defaults = await serve(createEcho())
    const slowHeaders = rawConnection(defaults)
    slowHeaders.socket.write(headersStart)
    const slowBody = rawConnection(defaults)
    slowBody.socket.write(bodyStart)
    const server = await serve(createEcho(), { headersTimeoutMs: 300, requestTimeoutMs: 600 })
    const headers = rawConnection(server)
    headers.socket.write(headersStart)
    const body = rawConnection(server)
    body.socket.write(bodyStart)
    const refused = rawConnection(server) // answered 413 at once, then its body never ends
    refused.socket.write(
      'POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 1000000000\r\n\r\n{"model": ',
    )
    const [headersClosed, bodyClosed, refusedClosed] = await Promise.all([headers.closed, body.closed, refused.closed])
    expect([slowHeaders.isClosed(), slowBody.isClosed()]).toEqual([false, false])
    expect(refusedClosed).toMatch(/^HTTP\/1\.1 413/)
    expect(headersClosed).toMatch(/^HTTP\/1\.1 408/)
    expect(bodyClosed).toMatch(/^HTTP\/1\.1 408/)
    expect((await post(server, '/chat/completions', chat)).status).toBe(200)
  })

  it('lets a generation run past requestTimeoutMs once the request has arrived', async () => {
    const inner = createEcho()
    const slow: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'echo',
      generate: async (requests) => {
        await new Promise((resolve) => setTimeout(resolve, 3_000))
        return inner.generate(requests)
      },
    }
    // A second for the small request to arrive (a busy machine can hold this process that long), three for the generation.
    const server = await serve(slow, { headersTimeoutMs: 1_000, requestTimeoutMs: 1_000 })
    expect((await post(server, '/chat/completions', chat)).status).toBe(200)
  })

  it('accepts at most maxConnections connections at once; the others are dropped until one closes', async () => {
    const server = await serve(createEcho(), { maxConnections: 2 })
    const first = rawConnection(server)
    rawConnection(server) // the second
    await waitFor(() => server.stats().connections === 2) // both accepted by the server, not only connected
    const third = rawConnection(server)
    third.socket.write('GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n')
    expect(await third.closed).toBe('')
    first.socket.destroy()
    await first.closed
    await waitFor(() => server.stats().connections === 1)
    expect((await fetch(server.url.replace('/v1', '/health'))).status).toBe(200)
  })

  it('checks the limits given', async () => {
    await expect(serveOpenAICompatible(createEcho(), { headersTimeoutMs: 2_000, requestTimeoutMs: 1_000 })).rejects.toThrow(/headersTimeoutMs/)
    await expect(serveOpenAICompatible(createEcho(), { maxGenerationsPerRequest: 0 })).rejects.toThrow(/maxGenerationsPerRequest/)
    await expect(serveOpenAICompatible(createEcho(), { apiKey: '' })).rejects.toThrow(/apiKey/)
  })

  it('reports its figures at GET /stats (behind the API key): answers by status, connections, memory, and the extra figures given', async () => {
    const server = await serve(createEcho(), { apiKey: 'sk-stats', extraStats: () => ({ tensors: 42 }) })
    const headers = { authorization: 'Bearer sk-stats', 'content-type': 'application/json' }
    expect((await post(server, '/chat/completions', chat, headers)).status).toBe(200)
    expect((await post(server, '/chat/completions', { model: 'echo' }, headers)).status).toBe(400)
    expect((await fetch(server.url.replace('/v1', '/stats'))).status).toBe(401)
    const answer = await fetch(server.url.replace('/v1', '/stats'), { headers })
    expect(answer.status).toBe(200)
    const figures = (await answer.json()) as Record<string, unknown>
    expect(figures).toMatchObject({ status: 'ok', requests: 1, batches: 1, answers: { 200: 1, 400: 1, 401: 1 }, tensors: 42 })
    expect(figures.connections).toBeGreaterThanOrEqual(1)
    expect((figures.memory as { rssBytes: number }).rssBytes).toBeGreaterThan(1e6)
    expect(figures.eventLoopDelayMs).toEqual({ p50: expect.any(Number), p99: expect.any(Number), max: expect.any(Number) })
    expect(server.stats()).toMatchObject({ requests: 1, answers: { 200: 2, 400: 1, 401: 1 } })
  })

  it('answers a body it refuses (413, 415, 401) and reads the rest, so a client still sending gets the answer, not a reset', async () => {
    const server = await serve(createEcho(), { maxBodyBytes: 1024, apiKey: 'sk' })
    const refusals = [
      ['application/json', 'Bearer sk', 413],
      ['text/plain', 'Bearer sk', 415],
      ['application/json', 'Bearer wrong', 401],
    ] as const
    for (const [type, authorization, status] of refusals) {
      const { socket, closed } = rawConnection(server)
      const size = 256 * 1024
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: ${type}\r\nauthorization: ${authorization}\r\ncontent-length: ${size}\r\n\r\n`,
      )
      for (let sent = 0; sent < size; sent += 32 * 1024) {
        socket.write('x'.repeat(32 * 1024))
        await new Promise((resolve) => setTimeout(resolve, 20)) // still sending after the answer went out
      }
      // The same connection still serves the next request.
      socket.end('GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n')
      const text = await closed
      expect(text).toMatch(new RegExp(`^HTTP/1\\.1 ${status}`))
      expect(text).toMatch(/HTTP\/1\.1 200 OK[\s\S]*"status":"ok"/)
    }
  })
})
