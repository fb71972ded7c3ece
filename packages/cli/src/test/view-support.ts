import { request } from 'node:http'
import type { TrajectoryRecord } from '@ludic/trainer'

/** A `trajectories.jsonl` record as the trainers write it (format `ludic.trajectory.v1`), with `changes` applied. */
export function trajectoryRecord(
  step: number,
  changes: { environmentId?: string; returns?: Record<string, number>; response?: string } = {},
): TrajectoryRecord {
  const response = changes.response ?? 'bet'
  return {
    format: 'ludic.trajectory.v1',
    step,
    policyVersion: step - 1,
    trainer: 'self-play',
    episode: {
      id: `episode-${step}`,
      environmentId: changes.environmentId ?? 'kuhn-poker-v1',
      seed: step,
      groupId: `group-${step}`,
      roles: ['player0', 'player1'],
      returns: changes.returns ?? { player0: 1, player1: -1 },
      done: true,
      truncated: false,
      external: false,
    },
    turns: [
      {
        index: 0,
        role: 'player0',
        observation: 'card K',
        legalActions: ['bet', 'check'],
        action: 'bet',
        rewards: { player0: 0, player1: 0 },
        invalidAction: false,
        trained: true,
        prompt: 'card K\n>',
        response,
        tokens: ['b', 'et'],
        tokenIds: [98, 300],
        logprobs: [-0.1, -0.2],
        advantages: [0.5, 0.5],
      },
    ],
    render: 'K vs Q: player0 wins',
  }
}

/** Lines of JSON, each ending with a newline. */
export function jsonLines(values: readonly unknown[]): string {
  return values.map((value) => `${JSON.stringify(value)}\n`).join('')
}

/** What a raw HTTP request got back. */
export interface RawAnswer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/**
 * A request sent as it is (node:http: the path is not normalised, the Host header is the caller's), its answer read
 * whole (at most 16 MiB).
 */
export function rawRequest(url: string, path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<RawAnswer> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const headers = { ...(options.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(options.body)) }), ...options.headers }
    const sent = request({ host: hostname, port, path, method: options.method ?? 'GET', headers }, (response) => {
      const chunks: Buffer[] = []
      let size = 0
      response.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > 16 << 20) return response.destroy(new Error('answer over 16 MiB'))
        chunks.push(chunk)
      })
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') }))
      response.on('error', reject)
    })
    sent.on('error', reject)
    sent.end(options.body)
  })
}

/** A Server-Sent Events client for tests: `next(event, accept)` resolves with the first such event's data from now on. */
export interface EventClient {
  next<T = unknown>(event: string, accept?: (data: T) => boolean): Promise<T>
  /** Events received so far, in order. */
  readonly received: { event: string; data: unknown }[]
  /** Comment lines received so far (`: heartbeat`), without the colon. */
  readonly comments: string[]
  close(): void
}

/** Opens `/api/events` of the server at `url`; resolves once its headers arrived. Waits are capped at `timeoutMs`. */
export function openEventClient(url: string, timeoutMs = 20_000): Promise<EventClient> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const received: { event: string; data: unknown }[] = []
    const comments: string[] = []
    const waiters = new Set<{ event: string; accept: (data: unknown) => boolean; done: (data: unknown) => void }>()
    let buffer = ''
    const sent = request({ host: hostname, port, path: '/api/events', headers: { accept: 'text/event-stream' } }, (response) => {
      if (response.statusCode !== 200) {
        response.resume()
        return reject(new Error(`/api/events answered ${response.statusCode}`))
      }
      response.setEncoding('utf8')
      response.on('data', (text: string) => {
        buffer += text
        for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          for (const line of block.split('\n')) if (line.startsWith(':')) comments.push(line.slice(1).trim())
          const event = /^event: (.*)$/m.exec(block)?.[1]
          const data = /^data: (.*)$/m.exec(block)?.[1]
          if (event === undefined || data === undefined) continue
          const parsed = JSON.parse(data) as unknown
          received.push({ event, data: parsed })
          for (const waiter of waiters)
            if (waiter.event === event && waiter.accept(parsed)) {
              waiters.delete(waiter)
              waiter.done(parsed)
            }
        }
      })
      response.on('error', () => {})
      resolve({
        received,
        comments,
        next<T>(event: string, accept: (data: T) => boolean = () => true) {
          return new Promise<T>((done, fail) => {
            const timer = setTimeout(() => {
              waiters.delete(waiter)
              fail(new Error(`no ${event} event within ${timeoutMs} ms`))
            }, timeoutMs)
            const waiter = {
              event,
              accept: accept as (data: unknown) => boolean,
              done: (data: unknown) => {
                clearTimeout(timer)
                done(data as T)
              },
            }
            waiters.add(waiter)
          })
        },
        close: () => sent.destroy(),
      })
    })
    sent.on('error', reject) // before the answer; a no-op after
    sent.end()
  })
}
