import { request as httpRequest } from 'node:http'
import { connect } from 'node:net'
import type { Completion, GenerateOptions, GenerationRequest, PolicyV1 } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import { afterEach, describe, expect, it } from 'vitest'
import { serveOpenAICompatible, type OpenAICompatibleServer, type ServeOptions } from './openai-compatible-server.js'

// The third attack round (issue 34): DNS rebinding through the Host header, streaming clients that stop reading,
// and a policy that never answers (a stuck lock) behind a /health that said ok.
const servers: OpenAICompatibleServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

async function serve(policy: PolicyV1, options: ServeOptions = {}): Promise<OpenAICompatibleServer> {
  const server = await serveOpenAICompatible(policy, { modelId: 'tiny', ...options })
  servers.push(server)
  return server
}

/** GET `path` with a raw `Host` header (fetch does not let one set it). */
function getWithHost(server: OpenAICompatibleServer, path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port: server.port, path, headers: { host } }, (response) => {
      let body = ''
      response.on('data', (chunk: Buffer) => (body += chunk.toString()))
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }))
    })
    request.on('error', reject)
    request.end()
  })
}

const until = async (condition: () => boolean, limitMs = 30_000) => {
  const start = Date.now()
  while (!condition()) {
    if (Date.now() - start > limitMs) throw new Error(`not within ${limitMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe('serveOpenAICompatible against hostile clients', () => {
  it('refuses a Host that is a DNS name (a rebinding page) and takes IP addresses, localhost and the allowed names', async () => {
    const server = await serve(createScriptedPolicy({ id: 'tiny', replies: ['x'] }), { allowedHosts: ['models.internal', '.example.com'] })
    const refused = await getWithHost(server, '/v1/models', `attacker.test:${server.port}`)
    expect(refused.status).toBe(403)
    expect(JSON.parse(refused.body).error).toMatchObject({ code: 'host_not_allowed' })
    expect((await getWithHost(server, '/health', 'rebound.attacker.test')).status).toBe(403)
    expect((await getWithHost(server, '/v1/models', `127.0.0.1:${server.port}`)).status).toBe(200)
    expect((await getWithHost(server, '/v1/models', `localhost:${server.port}`)).status).toBe(200)
    expect((await getWithHost(server, '/v1/models', `[::1]:${server.port}`)).status).toBe(200)
    expect((await getWithHost(server, '/v1/models', 'models.internal')).status).toBe(200)
    expect((await getWithHost(server, '/v1/models', 'a.example.com:8000')).status).toBe(200)
    expect((await getWithHost(server, '/v1/models', 'example.com.attacker.test')).status).toBe(403)
    expect(server.stats().hostsRefused).toBe(3)
    const open = await serve(createScriptedPolicy({ id: 'tiny', replies: ['x'] }), { allowedHosts: ['*'] })
    expect((await getWithHost(open, '/v1/models', 'anything.test')).status).toBe(200)
  })

  it('cuts a streaming client that stops reading once maxStreamBufferBytes wait for it, and aborts its generation', async () => {
    let chunks = 0
    let aborted = false
    const flood: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'tiny',
      async generate(requests: readonly GenerationRequest[], options: GenerateOptions = {}): Promise<Completion[]> {
        // Streams 64 KiB a turn until aborted: 6 GiB in all, were nothing to stop it.
        for (chunks = 0; chunks < 100_000; chunks++) {
          if (options.signal?.aborted) {
            aborted = true
            throw options.signal.reason
          }
          options.onText?.(0, 'x'.repeat(65_536))
          await new Promise((resolve) => setImmediate(resolve))
        }
        return requests.map(() => ({
          text: '',
          tokenIds: new Int32Array(),
          logprobs: new Float32Array(),
          promptTokenIds: new Int32Array(),
          finishReason: 'length',
        }))
      },
    }
    const server = await serve(flood, { maxStreamBufferBytes: 256 * 1024 })
    const socket = connect(server.port, '127.0.0.1')
    const body = JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'go' }], stream: true, max_tokens: 100 })
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
    socket.pause() // reads nothing, keeps the socket
    socket.on('error', () => {})
    await until(() => aborted)
    expect(server.stats().slowClientsCut).toBe(1)
    // The kernel's socket buffers and the bound hold a few MiB at most, nowhere near the 6 GiB streamed otherwise.
    expect(chunks).toBeLessThan(1_000)
    socket.destroy()
  })

  it('says /health stalled while a generate call outlives its deadline without answering, and ok once it ends', async () => {
    let finish: () => void = () => {}
    const stuck: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'tiny',
      // Ignores its signal: a policy waiting on a lock that is never released.
      generate: (requests) =>
        new Promise((resolve) => {
          finish = () =>
            resolve(
              requests.map(() => ({
                text: 'late',
                tokenIds: new Int32Array([1]),
                logprobs: new Float32Array([0]),
                promptTokenIds: new Int32Array(),
                finishReason: 'stop' as const,
              })),
            )
        }),
    }
    const server = await serve(stuck, { generationTimeoutMs: 100, stalledAfterMs: 300 })
    const answer = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(answer.status).toBe(504)
    await until(() => !server.health().healthy)
    const health = await fetch(`${server.url.replace(/\/v1$/, '')}/health`)
    expect(health.status).toBe(503)
    expect(await health.json()).toMatchObject({
      status: 'stalled',
      error: expect.stringMatching(/a generate call has run for \d+ s, past the generation timeout/),
    })
    finish()
    await until(() => server.health().healthy)
    expect((await fetch(`${server.url.replace(/\/v1$/, '')}/health`)).status).toBe(200)
  })
})
