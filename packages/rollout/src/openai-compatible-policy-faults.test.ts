import { ParseError, type Completion, type GenerationRequest } from '@ludic/core'
import { createByteTokenizer } from '@ludic/core/test'
import { afterEach, describe, expect, it } from 'vitest'
import { GenerationBatchError } from './generation-batch-error.js'
import { createOpenAICompatiblePolicy } from './openai-compatible-policy.js'
import { RemotePolicyError } from './remote-policy-error.js'
import { waitFor } from './test/episodes.js'
import { chatAnswer, startFaultServer, type FaultServer } from './test/fault-server.js'

// Faults a well-behaved server never produces, from a scripted raw HTTP server on loopback.
const servers: FaultServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

async function faultServer(handle: Parameters<typeof startFaultServer>[0]): Promise<FaultServer> {
  const server = await startFaultServer(handle)
  servers.push(server)
  return server
}

const fast = { retryDelayMs: 5, maxRetryDelayMs: 20 }
const request: GenerationRequest = { messages: [{ role: 'user', content: 'x' }], maxTokens: 4 }

/** What `generate` threw for its only request. */
async function onlyError(promise: Promise<Completion[]>): Promise<unknown> {
  const error = await promise.then(
    () => new Error('expected a failure'),
    (caught: unknown) => caught,
  )
  expect(GenerationBatchError.isInstance(error)).toBe(true)
  return (error as GenerationBatchError).errors[0]
}

describe('createOpenAICompatiblePolicy under faults', () => {
  it('times out an attempt whose server sends the headers and then stalls, body included (one deadline per attempt)', async () => {
    const server = await faultServer((_, response, attempt) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      if (attempt <= 2)
        response.write('{"choices": [') // and nothing more
      else response.end(JSON.stringify(chatAnswer()))
    })
    const remote = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'm', timeoutMs: 200, maxRetries: 1, concurrency: 1, ...fast })
    const error = await onlyError(remote.generate([request])) // the server never finishes the body: only the deadline ends it
    expect(RemotePolicyError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ kind: 'timeout', attempts: 2, retryable: true })
    expect((error as Error).message).toMatch(/timed out after 2 attempts: .*200 ms/)
    // The concurrency slot was given back: the next request goes through.
    const [completion] = await remote.generate([request])
    expect(completion!.text).toBe('hi')
  })

  it('retries an answer cut off mid-body (a dropped connection), then reports it as a connection failure', async () => {
    const cut = (response: Parameters<Parameters<typeof startFaultServer>[0]>[1]) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' })
      response.write('{"choices": [{"message": ')
      setTimeout(() => response.socket?.destroy(), 10)
    }
    const flaky = await faultServer((_, response, attempt) => (attempt <= 2 ? cut(response) : response.end(JSON.stringify(chatAnswer()))))
    const remote = createOpenAICompatiblePolicy({ baseURL: flaky.url, model: 'm', maxRetries: 2, ...fast })
    const [completion] = await remote.generate([request])
    expect(completion!.text).toBe('hi')
    expect(flaky.requests).toBe(3)

    const broken = await faultServer((_, response) => cut(response))
    const error = await onlyError(createOpenAICompatiblePolicy({ baseURL: broken.url, model: 'm', maxRetries: 1, ...fast }).generate([request]))
    expect(RemotePolicyError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ kind: 'connection', attempts: 2, retryable: true })
    expect((error as Error).message).toMatch(/connection failed after 2 attempts: .*dropped while the answer was read/)
  })

  it('reports an answer that is not JSON as a ParseError, without retrying', async () => {
    const server = await faultServer((_, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end('{"choices": [{"message": {"content": "hi"}}')
    })
    const error = await onlyError(createOpenAICompatiblePolicy({ baseURL: server.url, model: 'm', ...fast }).generate([request]))
    expect(ParseError.isInstance(error)).toBe(true)
    expect((error as Error).message).toMatch(/Cannot parse the answer of http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: is not JSON/)
    expect(server.requests).toBe(1)
  })

  it.each([
    ['a negative id', { tokenIds: [-5, 1] }, /choices\[0\]\.token_ids\[0\].*-5/],
    ['an id past int32', { tokenIds: [1, 1e12] }, /choices\[0\]\.token_ids\[1\].*1000000000000/],
    ['a fractional id', { tokenIds: [1.5, 1] }, /choices\[0\]\.token_ids\[0\]/],
    ['a negative prompt id', { promptTokenIds: [3, -1] }, /prompt_token_ids\[1\].*-1/],
  ])('refuses token ids that are not ids: %s', async (_, answer, message) => {
    const server = await faultServer((__, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify(chatAnswer(answer)))
    })
    const error = await onlyError(createOpenAICompatiblePolicy({ baseURL: server.url, model: 'm', ...fast }).generate([request]))
    expect(ParseError.isInstance(error)).toBe(true)
    expect((error as Error).message).toMatch(message)
  })

  it("refuses ids past the tokenizer's vocabulary when it has one, token_id:<id> strings included", async () => {
    let answer: Record<string, unknown> = chatAnswer({ tokenIds: [104, 300] })
    const server = await faultServer((_, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify(answer))
    })
    const tokenizer = createByteTokenizer() // 259 ids
    const remote = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'm', tokenizer, ...fast })
    expect((await onlyError(remote.generate([request]))) as Error).toMatchObject({
      message: expect.stringMatching(/token_ids\[1\]: is 300, not a token id: an integer in \[0, 259\) \(the tokenizer's vocabulary\)/),
    })
    answer = {
      ...chatAnswer(),
      choices: [{ message: { content: 'hi' }, finish_reason: 'stop', logprobs: { content: [{ token: 'token_id:-5', logprob: -1 }] } }],
    }
    const fromText = await onlyError(createOpenAICompatiblePolicy({ baseURL: server.url, model: 'm', ...fast }).generate([request]))
    expect(ParseError.isInstance(fromText)).toBe(true)
    expect((fromText as Error).message).toMatch(/logprobs\.content\[0\]\.token.*-5/)
  })

  it('stops reading an answer past maxResponseBytes, while it streams and from its content-length', async () => {
    let sent = 0
    const endless = await faultServer((_, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.write('{"choices": [{"message": {"content": "')
      const chunk = 'x'.repeat(64 * 1024)
      const more = () => {
        // Up to 400 MB unless the client hangs up first.
        while (sent < 400e6 && !response.destroyed && response.write(chunk)) sent += chunk.length
        if (sent < 400e6 && !response.destroyed) response.once('drain', more)
      }
      response.on('close', () => response.removeAllListeners('drain'))
      more()
    })
    const remote = createOpenAICompatiblePolicy({ baseURL: endless.url, model: 'm', maxResponseBytes: 1024 * 1024, ...fast })
    const error = await onlyError(remote.generate([request]))
    expect(ParseError.isInstance(error)).toBe(true)
    expect((error as Error).message).toMatch(/larger than maxResponseBytes \(1048576 bytes\)/)
    expect(sent).toBeLessThan(64e6) // the client hung up long before 400 MB
    expect(endless.requests).toBe(1) // not retried

    const declared = await faultServer((_, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(400e6) })
      response.write('{')
    })
    const early = await onlyError(createOpenAICompatiblePolicy({ baseURL: declared.url, model: 'm', maxResponseBytes: 1024, ...fast }).generate([request]))
    expect((early as Error).message).toMatch(/larger than maxResponseBytes \(1024 bytes\)/)

    // Error answers are capped too: the SDK reads them, and sees the cap's message instead of 400 MB.
    const hugeError = await faultServer((_, response) => {
      response.writeHead(400, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ error: { message: 'x'.repeat(4096), type: 'invalid_request_error', param: null, code: null } }))
    })
    const refused = await onlyError(createOpenAICompatiblePolicy({ baseURL: hugeError.url, model: 'm', maxResponseBytes: 1024, ...fast }).generate([request]))
    expect(refused).toMatchObject({ kind: 'http', status: 400 })
    expect((refused as Error).message).toMatch(/larger than maxResponseBytes/)
  })

  it("passes the caller's AbortSignal on: a waiting request, a backoff and a stalled answer all end with its reason", async () => {
    const stalled = await faultServer((_, response) => response.writeHead(200, { 'content-type': 'application/json' }).write('{'))
    const remote = createOpenAICompatiblePolicy({ baseURL: stalled.url, model: 'm', concurrency: 1, timeoutMs: 60_000, ...fast })
    const controller = new AbortController()
    const pending = remote.generate([request, request], { signal: controller.signal }) // the second waits for a slot
    const outcome = pending.catch((error: unknown) => error)
    await waitFor(() => stalled.requests === 1) // the first request is at the server, the second waits for its slot
    const reason = new Error('caller gave up')
    controller.abort(reason)
    expect(await outcome).toBe(reason)
    expect(stalled.requests).toBe(1)
    // The slot is free again.
    const again = new AbortController()
    const next = remote.generate([request], { signal: again.signal }).catch((error: unknown) => error)
    await waitFor(() => stalled.requests === 2)
    again.abort()
    expect(await next).toMatchObject({ name: 'AbortError' })

    // Aborted during a 60 s backoff.
    const failing = await faultServer((_, response) => response.writeHead(503, { 'content-type': 'application/json' }).end('{}'))
    const patient = createOpenAICompatiblePolicy({ baseURL: failing.url, model: 'm', retryDelayMs: 60_000, maxRetryDelayMs: 60_000 })
    const backoff = new AbortController()
    const waiting = patient.generate([request], { signal: backoff.signal }).catch((error: unknown) => error)
    await waitFor(() => failing.requests === 1) // answered 503: the client backs off for 60 s
    backoff.abort(reason)
    expect(await waiting).toBe(reason)
    await expect(patient.generate([request], { signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
  })

  it('calls onText once per request with the whole text (it cannot stream)', async () => {
    const server = await faultServer((_, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify(chatAnswer({ text: 'hello' })))
    })
    const texts: [number, string][] = []
    const remote = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'm', ...fast })
    const completions = await remote.generate([request, request], { onText: (index, text) => texts.push([index, text]) })
    expect(completions.map((completion) => completion.text)).toEqual(['hello', 'hello'])
    expect(texts.sort()).toEqual([
      [0, 'hello'],
      [1, 'hello'],
    ])
  })
})
