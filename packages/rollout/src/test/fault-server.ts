import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A raw HTTP server whose answers a test scripts, for the faults a real server would not produce. */
export interface FaultServer {
  /** Base URL ending in `/v1`. */
  readonly url: string
  /** Requests received so far. */
  readonly requests: number
  close(): Promise<void>
}

/**
 * Starts a loopback server that calls `handle(request, response, attempt)` for every request (attempt counts
 * from 1). The request body is read first. `close()` drops open connections, so a stalled answer ends.
 */
export async function startFaultServer(handle: (request: IncomingMessage, response: ServerResponse, attempt: number) => void): Promise<FaultServer> {
  let requests = 0
  const server = createServer((request, response) => {
    request.resume()
    request.once('end', () => handle(request, response, ++requests))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v1`,
    get requests() {
      return requests
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** A well-formed chat answer with token ids, as Ludic's server and vLLM give it. */
export function chatAnswer(options: { text?: string; tokenIds?: unknown[]; promptTokenIds?: unknown[] } = {}): Record<string, unknown> {
  const text = options.text ?? 'hi'
  const tokenIds = options.tokenIds ?? Array.from(text, (character) => character.charCodeAt(0))
  return {
    id: 'chatcmpl-test',
    object: 'chat.completion',
    created: 0,
    model: 'm',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: text },
        finish_reason: 'stop',
        logprobs: { content: tokenIds.map((_, index) => ({ token: `t${index}`, logprob: -1 })) },
        token_ids: tokenIds,
      },
    ],
    prompt_token_ids: options.promptTokenIds ?? [1, 2],
  }
}
