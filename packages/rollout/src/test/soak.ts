import { type ChildProcess, spawn } from 'node:child_process'
import { connect } from 'node:net'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import OpenAI from 'openai'

/**
 * A soak test of an OpenAI-compatible server in its own process (by default `bench/tiny-model-server.ts`: a tiny
 * local model on the WebAssembly backend; `server` starts another, e.g. `ludic serve`): `clients` concurrent clients
 * for `durationMs`, a `badFraction` of them sending, at random, one of the bad requests (`badRequests`, each with
 * the answer it must get), the others ordinary requests (chat, streamed chat, completions) that must all be answered
 * 200. Samples the server's `GET /stats` (RSS, tensors) and `/health` as it goes. Used by `bench/soak.ts` (2 minutes),
 * by a 10-second test, and by `ludic serve`'s hostile soak.
 */
export interface SoakOptions {
  durationMs: number
  clients: number
  /** Share of the clients that send bad requests. */
  badFraction: number
  /** Load before the reference RSS is taken. */
  warmupMs: number
  sampleEveryMs?: number
  /** Span of samples whose median is an RSS level. Default: 20 s. */
  levelWindowMs?: number
  /** Prints progress lines. */
  log?: (line: string) => void
  /** The server process to start. Default: the repository's tiny-model server (bench/tiny-model-server.ts). */
  server?: SoakServer
  /** The bad requests the bad clients send. Default: `badRequests`. */
  badRequests?: Readonly<Record<string, BadRequest>>
  /** The models good requests name, in turn. Default: the server's model. */
  goodModels?: readonly string[]
  /** Runs once the server listens, before any client (e.g. loads the adapters `goodModels` name). */
  prepare?: (server: ServerProcess) => Promise<void>
  /**
   * Runs after the load, before the idle figures are read, to bring the server back to the state it was in after the
   * warm-up (e.g. one request to the adapter the warm-up used last, so the same adapter is attached). Default: none.
   */
  settle?: (server: ServerProcess) => Promise<void>
}

/**
 * How to start a server process: `command` with `args`; it must print one JSON line with its `url` (`…/v1`) on stdout
 * once listening, answer `GET /stats` with `memory.rssBytes` and `eventLoopDelayMs` (and `tensors` when it has them),
 * and stop at SIGTERM.
 */
export interface SoakServer {
  command: string
  args: readonly string[]
  /** The model name clients send. */
  model: string
  /** The key clients send as `Authorization: Bearer`. */
  apiKey: string
  /** The server's `requestTimeoutMs` (half-sent requests wait for it). */
  requestTimeoutMs: number
}

export interface MemorySample {
  atMs: number
  rssBytes: number
  heapUsedBytes: number
  tensors: number
  /** Longest the server's event loop was held since the previous sample. */
  eventLoopDelayMaxMs: number
  /** What `/health` answered then. */
  healthStatus: number
}

export interface SoakReport {
  durationMs: number
  clients: { good: number; bad: number }
  good: { sent: number; ok: number; failures: string[]; byKind: Record<string, number>; latencyMs: { p50: number; p95: number; max: number } }
  /** Per kind of bad request: how many were sent and what came back. */
  bad: Record<string, { sent: number; outcomes: Record<string, number> }>
  /** Bad requests answered otherwise than they must be (a 500, a hang…). */
  unexpected: string[]
  health: { status: number; body: unknown }
  stats: Record<string, unknown>
  /** Tensors with no request in flight, before the load and after it. */
  idleTensors: { before: number; after: number }
  /**
   * The RSS level after the warm-up (median of the samples in the `levelWindowMs` after it) and at the end
   * (median of the samples in the last `levelWindowMs` of the load), both under load; `change` compares them.
   */
  rss: { afterWarmupBytes: number; endBytes: number; maxBytes: number; change: number }
  /** Longest the server's event loop was held during the load. */
  eventLoopDelayMaxMs: number
  /** Longest this process's (the clients') event loop was held: past the server's headersTimeoutMs, a request on a new connection gets a 408. */
  clientEventLoopDelayMaxMs: number
  samples: MemorySample[]
  serverExit: string | undefined
  problems: string[]
  passed: boolean
}

/** The repository's tiny-model server, with header and body timeouts shorter than the defaults (10 s, 30 s), so that half-sent requests are cheap for the bad clients. */
export function tinyModelServer(): SoakServer {
  const requestTimeoutMs = 10_000
  const script = fileURLToPath(new URL('../../bench/tiny-model-server.ts', import.meta.url))
  return {
    command: process.execPath,
    args: [
      '--import',
      'tsx',
      script,
      '--api-key',
      'soak-key',
      '--headers-timeout-ms',
      '5000',
      '--request-timeout-ms',
      String(requestTimeoutMs),
      '--generation-timeout-ms',
      '60000',
    ],
    model: 'tiny',
    apiKey: 'soak-key',
    requestTimeoutMs,
  }
}

/** A server started for a soak: where it listens, what clients send, and its process. */
export interface ServerProcess {
  url: string
  origin: string
  model: string
  /** `authorization` and `content-type` headers for a JSON request. */
  headers: Record<string, string>
  apiKey: string
  requestTimeoutMs: number
  child: ChildProcess
  exited: () => string | undefined
  stderr: () => string
}

/** Starts the server process and waits for its URL. */
async function startServer(settings: SoakServer, log: (line: string) => void): Promise<ServerProcess> {
  const child = spawn(settings.command, [...settings.args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  let exit: string | undefined
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
    for (const line of chunk.toString().split('\n')) if (line.trim() !== '') log(`server: ${line}`)
    if (stderr.length > 100_000) stderr = stderr.slice(-50_000)
  })
  child.once('exit', (code, signal) => (exit = `exited with ${code ?? signal}`))
  // A test stopped at its timeout never reaches stopServer: the server must not outlive this process.
  const killOnExit = () => child.kill('SIGKILL')
  process.once('exit', killOnExit)
  child.once('exit', () => process.off('exit', killOnExit))
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = ''
    const timer = setTimeout(() => reject(new Error(`the server did not start in 60 s: ${stderr}`)), 60_000)
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      // One JSON line, or a pretty-printed document (`ludic --json serve`): whichever parses first.
      const url = [stdout.split('\n')[0]!, stdout].map(parseUrl).find((found) => found !== undefined)
      if (url === undefined) return
      clearTimeout(timer)
      resolve(url)
    })
    child.once('exit', () => {
      clearTimeout(timer)
      reject(new Error(`the server exited before listening: ${stderr}`))
    })
  })
  return {
    url,
    origin: url.replace(/\/v1$/, ''),
    model: settings.model,
    headers: { authorization: `Bearer ${settings.apiKey}`, 'content-type': 'application/json' },
    apiKey: settings.apiKey,
    requestTimeoutMs: settings.requestTimeoutMs,
    child,
    exited: () => exit,
    stderr: () => stderr,
  }
}

/** The `url` of a JSON document, if the text is one. */
function parseUrl(text: string): string | undefined {
  try {
    const url = (JSON.parse(text) as { url?: unknown }).url
    return typeof url === 'string' ? url : undefined
  } catch {
    return undefined
  }
}

const chatBody = (server: ServerProcess, content: string, extra: Record<string, unknown> = {}) => ({
  model: server.model,
  messages: [{ role: 'user', content }],
  max_tokens: 16,
  ...extra,
})

/** One bad request: sends it and says what came back ('400', 'closed with 408', 'left'…), and whether that is right. */
export type BadRequest = (server: ServerProcess) => Promise<{ outcome: string; expected: boolean }>

/** POSTs `body` to `path` (under `/v1`) and says the status. */
export async function postStatus(server: ServerProcess, path: string, body: string, headers: Record<string, string> = server.headers): Promise<string> {
  const response = await fetch(`${server.url}${path}`, { method: 'POST', headers, body })
  await response.arrayBuffer()
  return String(response.status)
}

/** An outcome, and whether it is one of `expected`. */
export const answer = (outcome: string, ...expected: string[]) => ({ outcome, expected: expected.includes(outcome) })

/** The 9 MiB body, built once: building it for each request would stall this process (the clients), not the server. */
let hugeBody: string | undefined

/** Sends the start of a request and stops: the server must answer 408 and close within its timeouts. */
function halfSent(server: ServerProcess, text: string): Promise<{ outcome: string; expected: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
    let received = ''
    const limitMs = server.requestTimeoutMs + 5_000 // Node checks the timeouts every second
    const timer = setTimeout(() => {
      socket.destroy()
      resolve({ outcome: `still open after ${limitMs / 1000} s`, expected: false })
    }, limitMs)
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()))
    socket.on('error', () => {})
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(answer(`closed with ${received.slice(9, 12) || 'nothing'}`, 'closed with 408'))
    })
    socket.write(text)
  })
}

/** The bad requests of issue 13 that reach the server (items 1, 2 and 11), each with the answer it must get. */
export const badRequests: Readonly<Record<string, BadRequest>> = {
  'long prompt (21 KB, past the context)': async (server) =>
    answer(await postStatus(server, '/chat/completions', JSON.stringify(chatBody(server, 'x'.repeat(21_000), { max_tokens: 1 }))), '400'),
  'max_tokens 1e9': async (server) => answer(await postStatus(server, '/chat/completions', JSON.stringify(chatBody(server, 'hi', { max_tokens: 1e9 }))), '400'),
  '200 prompts × n 128': async (server) =>
    answer(
      await postStatus(server, '/completions', JSON.stringify({ model: server.model, prompt: Array.from({ length: 200 }, () => 'p'), n: 128, max_tokens: 4 })),
      '400',
    ),
  'text/plain body': async (server) =>
    answer(await postStatus(server, '/chat/completions', JSON.stringify(chatBody(server, 'hi')), { ...server.headers, 'content-type': 'text/plain' }), '415'),
  'malformed percent-encoding': async (server) => {
    const response = await fetch(`${server.url}/models/%E0%A4%A`, { headers: server.headers })
    await response.arrayBuffer()
    return answer(String(response.status), '400')
  },
  'broken JSON': async (server) => answer(await postStatus(server, '/chat/completions', '{"model": "tiny", "messages": ['), '400'),
  'wrong API key': async (server) =>
    answer(await postStatus(server, '/chat/completions', JSON.stringify(chatBody(server, 'hi')), { ...server.headers, authorization: 'Bearer wrong' }), '401'),
  'body over 8 MiB': async (server) =>
    answer(
      await postStatus(server, '/chat/completions', (hugeBody ??= JSON.stringify(chatBody(server, 'x'.repeat(9 * 1024 * 1024))))).catch(() => 'reset'),
      '413',
    ),
  'half-sent headers': (server) => halfSent(server, 'POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n'),
  'half-sent body': (server) =>
    halfSent(
      server,
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${server.apiKey}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"model": `,
    ),
  'client leaves mid-generation': async (server) => {
    const leave = new AbortController()
    setTimeout(() => leave.abort(), 100)
    const body = JSON.stringify(chatBody(server, 'go on', { max_tokens: 1500 }))
    const outcome = await fetch(`${server.url}/chat/completions`, { method: 'POST', headers: server.headers, body, signal: leave.signal }).then(
      async (response) => String(response.status),
      () => 'left',
    )
    return answer(outcome, 'left', '200')
  },
  'streaming client leaves': async (server) => {
    const client = new OpenAI({ baseURL: server.url, apiKey: server.apiKey, maxRetries: 0 })
    const stream = await client.chat.completions.create({ model: server.model, messages: [{ role: 'user', content: 'go on' }], max_tokens: 1500, stream: true })
    let chunks = 0
    for await (const _ of stream) if (++chunks === 3) break
    return answer('left', 'left')
  },
}

/** One ordinary request to `model`, of a kind picked by the counter; throws unless it is answered in full. */
async function goodRequest(client: OpenAI, model: string, count: number, seed: number): Promise<string> {
  const kind = ['chat', 'streamed chat', 'completions'][count % 3]!
  const maxTokens = 8 + (seed % 17)
  if (kind === 'chat') {
    const answer = await client.chat.completions.create({ model, messages: [{ role: 'user', content: `hello #${seed}` }], max_tokens: maxTokens, seed })
    if (typeof answer.choices[0]?.message.content !== 'string' || answer.usage?.completion_tokens === undefined) throw new Error('malformed chat answer')
  } else if (kind === 'streamed chat') {
    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: `stream #${seed}` }],
      max_tokens: maxTokens,
      seed,
      stream: true,
      stream_options: { include_usage: true },
    })
    let finished = false
    let usage = false
    for await (const chunk of stream) {
      finished ||= chunk.choices.some((choice) => choice.finish_reason !== null)
      usage ||= chunk.usage != null
    }
    if (!finished || !usage) throw new Error('a stream ended without its finish_reason or usage')
  } else {
    const answer = await client.completions.create({ model, prompt: [`a${seed}`, `b${seed}`], n: 2, max_tokens: maxTokens, seed })
    if (answer.choices.length !== 4) throw new Error(`${answer.choices.length} choices for 2 prompts × n 2`)
  }
  return kind
}

/** The server's figures; asked twice if the first connection fails (a measurement, not what is tested). */
async function readStats(server: ServerProcess): Promise<Record<string, unknown>> {
  const read = async () => (await (await fetch(`${server.origin}/stats`, { headers: server.headers })).json()) as Record<string, unknown>
  return read().catch(read)
}

/** `/health`'s status (0 when it could not be asked). */
async function readHealth(server: ServerProcess): Promise<number> {
  return fetch(`${server.origin}/health`).then(
    async (response) => {
      await response.arrayBuffer()
      return response.status
    },
    () => 0,
  )
}

const sampleOf = (stats: Record<string, unknown>, atMs: number, healthStatus: number): MemorySample => {
  const memory = stats.memory as { rssBytes: number; heapUsedBytes: number }
  const delay = stats.eventLoopDelayMs as { max: number }
  return {
    atMs,
    rssBytes: memory.rssBytes,
    heapUsedBytes: memory.heapUsedBytes,
    tensors: stats.tensors as number,
    eventLoopDelayMaxMs: delay.max,
    healthStatus,
  }
}

const percentile = (sorted: readonly number[], fraction: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => {})
  const server = await startServer(options.server ?? tinyModelServer(), log)
  const requests = options.badRequests ?? badRequests
  const models = options.goodModels ?? [server.model]
  try {
    const badClients = Math.round(options.clients * options.badFraction)
    const goodClients = options.clients - badClients
    const good = { sent: 0, ok: 0, failures: [] as string[], byKind: {} as Record<string, number>, latencies: [] as number[] }
    const bad: SoakReport['bad'] = {}
    const unexpected: string[] = []
    const samples: MemorySample[] = []
    const kinds = Object.keys(requests)

    // One request first (the backend's first call), then the idle tensor count.
    await options.prepare?.(server)
    const warm = new OpenAI({ baseURL: server.url, apiKey: server.apiKey, maxRetries: 0 })
    for (const model of models) await goodRequest(warm, model, 0, 1)
    const before = sampleOf(await readStats(server), 0, await readHealth(server))
    log(`server ${server.url}: ${goodClients} good and ${badClients} bad clients for ${options.durationMs / 1000} s; idle: ${describeSample(before)}`)

    const clientDelay = monitorEventLoopDelay({ resolution: 10 })
    clientDelay.enable()
    const started = Date.now()
    const endAt = started + options.durationMs
    const goodClient = async (index: number) => {
      const client = new OpenAI({ baseURL: server.url, apiKey: server.apiKey, maxRetries: 0, timeout: 120_000 })
      for (let count = 0; Date.now() < endAt; count++) {
        good.sent++
        const sentAt = Date.now()
        try {
          const kind = await goodRequest(client, models[(count + index) % models.length]!, count + index, index * 100_003 + count)
          good.ok++
          good.byKind[kind] = (good.byKind[kind] ?? 0) + 1
          good.latencies.push(Date.now() - sentAt)
        } catch (error) {
          if (good.failures.length < 20) good.failures.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error))
        }
      }
    }
    const badClient = async (index: number) => {
      // Every kind in a random order, again and again: at random, yet each kind is sent even in a short run
      // (past the end if need be: on a loaded machine one round of slow kinds can outlast a short run).
      const order: string[] = []
      while (Date.now() < endAt || Object.keys(bad).length < kinds.length) {
        if (order.length === 0) order.push(...shuffle(kinds))
        const kind = order.pop()!
        const record = (bad[kind] ??= { sent: 0, outcomes: {} })
        record.sent++
        const result = await requests[kind]!(server).catch((error: unknown) => ({ outcome: `threw ${String(error)}`, expected: false }))
        record.outcomes[result.outcome] = (record.outcomes[result.outcome] ?? 0) + 1
        if (!result.expected && unexpected.length < 20) unexpected.push(`${kind} (client ${index}): ${result.outcome}`)
      }
    }
    const sampler = (async () => {
      const every = options.sampleEveryMs ?? 5_000
      while (Date.now() < endAt) {
        await new Promise((resolve) => setTimeout(resolve, Math.min(every, Math.max(0, endAt - Date.now()))))
        const sample = sampleOf(await readStats(server), Date.now() - started, await readHealth(server))
        samples.push(sample)
        log(`${(sample.atMs / 1000).toFixed(0)} s: ${describeSample(sample)}; good ${good.ok}/${good.sent}, bad ${sum(bad)}`)
      }
    })()
    await Promise.all([
      ...Array.from({ length: goodClients }, (_, index) => goodClient(index)),
      ...Array.from({ length: badClients }, (_, index) => badClient(index)),
      sampler,
    ])
    clientDelay.disable()
    // Let aborted generations stop and connections close, then count the tensors with nothing in flight.
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    await options.settle?.(server)
    const healthResponse = await fetch(`${server.origin}/health`)
    const health = { status: healthResponse.status, body: (await healthResponse.json()) as unknown }
    const stats = await readStats(server)
    const after = sampleOf(stats, Date.now() - started, health.status)
    const window = options.levelWindowMs ?? 20_000
    const loadEnd = samples.at(-1)!.atMs
    const afterWarmupBytes = median(
      samples.filter((sample) => sample.atMs >= options.warmupMs && sample.atMs <= options.warmupMs + window).map((sample) => sample.rssBytes),
    )
    const endBytes = median(samples.filter((sample) => sample.atMs >= loadEnd - window).map((sample) => sample.rssBytes))
    const rss = { afterWarmupBytes, endBytes, maxBytes: Math.max(...samples.map((sample) => sample.rssBytes)), change: endBytes / afterWarmupBytes - 1 }
    const latencies = good.latencies.sort((a, b) => a - b)
    const problems = [
      ...(good.ok !== good.sent
        ? [
            `${good.sent - good.ok} of ${good.sent} good requests failed (event loops held up to ` +
              `${Math.max(...samples.map((sample) => sample.eventLoopDelayMaxMs))} ms in the server, ${Math.round(clientDelay.max / 1e6)} ms in the clients: ` +
              'a 408 means a request was not read in time)',
          ]
        : []),
      ...(good.ok === 0 ? ['no good request was answered'] : []),
      ...(unexpected.length > 0 ? [`${unexpected.length} bad requests answered wrongly`] : []),
      ...(health.status !== 200 ? [`/health answered ${health.status}`] : []),
      ...(samples.some((sample) => sample.healthStatus !== 200)
        ? [
            `/health answered ${samples
              .filter((sample) => sample.healthStatus !== 200)
              .map((sample) => sample.healthStatus)
              .join(', ')} under load`,
          ]
        : []),
      ...(after.tensors !== before.tensors ? [`idle tensors went from ${before.tensors} to ${after.tensors}`] : []),
      ...(Math.abs(rss.change) > 0.2 ? [`RSS changed by ${(rss.change * 100).toFixed(1)} % after the warm-up (limit 20 %)`] : []),
      ...(server.exited() !== undefined ? [`the server ${server.exited()}`] : []),
    ]
    return {
      durationMs: Date.now() - started,
      clients: { good: goodClients, bad: badClients },
      good: {
        sent: good.sent,
        ok: good.ok,
        failures: good.failures,
        byKind: good.byKind,
        latencyMs: { p50: percentile(latencies, 0.5), p95: percentile(latencies, 0.95), max: latencies.at(-1) ?? 0 },
      },
      bad,
      unexpected,
      health,
      stats,
      idleTensors: { before: before.tensors, after: after.tensors },
      rss,
      eventLoopDelayMaxMs: Math.max(...samples.map((sample) => sample.eventLoopDelayMaxMs)),
      clientEventLoopDelayMaxMs: Math.round(clientDelay.max / 1e6),
      samples,
      serverExit: server.exited(),
      problems,
      passed: problems.length === 0,
    }
  } finally {
    await stopServer(server)
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

function shuffle<T>(items: readonly T[]): T[] {
  const shuffled = [...items]
  for (let index = shuffled.length - 1; index > 0; index--) {
    const other = Math.floor(Math.random() * (index + 1))
    ;[shuffled[index], shuffled[other]] = [shuffled[other]!, shuffled[index]!]
  }
  return shuffled
}

function sum(bad: SoakReport['bad']): number {
  return Object.values(bad).reduce((total, record) => total + record.sent, 0)
}

function describeSample(sample: MemorySample): string {
  return `health ${sample.healthStatus}, RSS ${(sample.rssBytes / 2 ** 20).toFixed(0)} MiB, heap ${(sample.heapUsedBytes / 2 ** 20).toFixed(0)} MiB, ${sample.tensors} tensors, event loop held ${sample.eventLoopDelayMaxMs} ms at most`
}

async function stopServer(server: ServerProcess): Promise<void> {
  if (server.exited() !== undefined) return
  const exited = new Promise((resolve) => server.child.once('exit', resolve))
  server.child.kill('SIGTERM')
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 5_000)
  await exited
  clearTimeout(timer)
}
