import type { Completion, GenerationRequest } from '@ludic/core'
import { afterEach, describe, expect, it } from 'vitest'
import { GenerationBatchError } from './generation-batch-error.js'
import { createOpenAICompatiblePolicy } from './openai-compatible-policy.js'
import { RemotePolicyError } from './remote-policy-error.js'
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
  it('times out an attempt whose server sends the headers and then stalls, body included (one deadline per attempt)', { timeout: 5_000 }, async () => {
    const server = await faultServer((_, response, attempt) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      if (attempt <= 2)
        response.write('{"choices": [') // and nothing more
      else response.end(JSON.stringify(chatAnswer()))
    })
    const remote = createOpenAICompatiblePolicy({ baseURL: server.url, model: 'm', timeoutMs: 200, maxRetries: 1, concurrency: 1, ...fast })
    const started = Date.now()
    const error = await onlyError(remote.generate([request]))
    expect(Date.now() - started).toBeLessThan(2_000)
    expect(RemotePolicyError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ kind: 'timeout', attempts: 2, retryable: true })
    expect((error as Error).message).toMatch(/timed out after 2 attempts: .*200 ms/)
    // The concurrency slot was given back: the next request goes through.
    const [completion] = await remote.generate([request])
    expect(completion!.text).toBe('hi')
  })
})
