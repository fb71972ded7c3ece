import { existsSync, type FSWatcher, watch } from 'node:fs'
import { realpath } from 'node:fs/promises'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgument } from '@ludic/core'
import { allowedHostRule } from '@ludic/rollout'
import { z } from 'zod'
import { openFileInside } from './file-inside.js'
import { type EpisodeSummary, RunData, type RunSummary } from './run-data.js'
import { discoverRuns } from './run-directories.js'
import { readRunFiles } from './run-files.js'

export const viewServerOptionsSchema = z.strictObject({
  /** The directories given (`resolveRunSources`): run directories, or directories holding run directories; real paths. */
  sources: z
    .array(z.strictObject({ argument: z.string(), path: z.string().min(1) }))
    .min(1)
    .max(256),
  /** Port to listen on; 0 picks a free one (read it from `url`). Default 6007 (TensorBoard's 6006, plus one). */
  port: z.number().int().min(0).max(65535).default(6007),
  /** Interface to listen on. Default `127.0.0.1` (this machine only). */
  host: z.string().min(1).default('127.0.0.1'),
  /** Host header names accepted besides IP addresses and localhost (`allowedHostRule` of `@ludic/rollout`). Default: none. */
  allowedHosts: z.array(z.string().min(1).max(253)).max(256).default([]),
  /** The built page (`index.html`, `assets/`). Default: `dist/view/` of `@ludic/cli`; a plain "page not built" page when missing. */
  staticDirectory: z.string().min(1).optional(),
  /** Event-stream clients (`/api/events`) at once; more get 503. Default 16. */
  maxEventClients: z.number().int().positive().max(1024).default(16),
  /** Bytes an event-stream client may leave unread before it is cut (as `ludic serve`'s streams; an event is at most 256 KiB). Default 1 MiB. */
  maxStreamBufferBytes: z
    .number()
    .int()
    .positive()
    .default(1 << 20),
  /** A comment line on every event stream this often, so proxies and browsers keep it open. Default 15 000 ms. */
  heartbeatMs: z.number().int().positive().default(15_000),
  /** How often the run directories are looked at while a page listens (file-system notifications come sooner). Default 1000 ms. */
  pollIntervalMs: z.number().int().positive().default(1000),
  /** A run whose logs changed this recently, and that has not finished since, is `running`. Default 120 000 ms. */
  runningWindowMs: z.number().int().positive().default(120_000),
  /** Lines of `metrics.jsonl` and `trajectories.jsonl` longer than this are skipped unread. Default 1 MiB. */
  maxLineBytes: z
    .number()
    .int()
    .positive()
    .default(1 << 20),
  /** Metrics records kept per run. Default 200 000. */
  maxMetricsRecords: z.number().int().positive().default(200_000),
  /** Episodes indexed per run. Default 200 000. */
  maxEpisodes: z.number().int().positive().default(200_000),
  /** Runs listed at most. Default 1000. */
  maxRuns: z.number().int().positive().default(1000),
  /** Open connections at most (Node's `maxConnections`). Default 64. */
  maxConnections: z.number().int().positive().default(64),
  /** Told of an unexpected error behind a 500 answer (the answer itself says only "internal error"). */
  onError: z.custom<(error: unknown) => void>((value) => typeof value === 'function', 'must be a function').optional(),
})
export type ViewServerOptions = z.input<typeof viewServerOptionsSchema>

/** A running `ludic view` server. */
export interface ViewServer {
  /** `http://<host>:<port>/`. */
  readonly url: string
  readonly port: number
  /** Event-stream clients now, and those cut since the start for not reading (see `maxStreamBufferBytes`). */
  stats(): { eventClients: number; slowClientsCut: number }
  /** Stops listening, ends the event streams and the watchers. */
  close(): Promise<void>
}

/** Every answer's security headers: the page's own scripts and styles only, no framing, no content sniffing. */
export const securityHeaders = {
  'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
} as const

/** A request the client should hear about: `{ error: { code, message } }` with its status. */
class ViewError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
}

const pageNotBuilt = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>ludic view: the page is not built</title></head>
<body>
<h1>ludic view: the page is not built</h1>
<p>This copy of <code>@ludic/cli</code> has no <code>dist/view/</code>. In a clone of Ludic, build it with
<code>npm run build --workspace @ludic/cli</code> and reload. The JSON API answers meanwhile: <a href="/api/runs">/api/runs</a>.</p>
</body>
</html>
`

/** `@ludic/cli`'s folder, found from this module (a source file under `src/`, or a chunk of `dist/`). */
function packageDirectory(): string {
  let directory = dirname(fileURLToPath(import.meta.url))
  for (let depth = 0; depth < 6 && !existsSync(join(directory, 'package.json')); depth++) directory = dirname(directory)
  return directory
}

/** The built page's default folder: `dist/view/` of `@ludic/cli`. */
export function defaultStaticDirectory(): string {
  return join(packageDirectory(), 'dist', 'view')
}

const wholeNumber = (minimum: number) =>
  z
    .string()
    .regex(/^-?\d{1,15}$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(minimum))
const finiteNumber = z.string().trim().min(1, 'must be a number').max(64).transform(Number).pipe(z.number())

const metricsQuerySchema = z.strictObject({ after: wholeNumber(-1).optional() })
const episodesQuerySchema = z.strictObject({
  step: wholeNumber(0).optional(),
  environment: z.string().max(256).optional(),
  role: z.string().max(256).optional(),
  minReward: finiteNumber.optional(),
  maxReward: finiteNumber.optional(),
  offset: wholeNumber(0).optional(),
  limit: wholeNumber(1).pipe(z.number().max(200)).optional(),
})

/** Most bytes of metrics records one event carries; more are announced with `refetch: true` (the page reads `/metrics?after=`). */
const maxEventRecordsBytes = 256 << 10

/**
 * `ludic view`'s server (node:http): the built page and a read-only JSON API over the run directories, with a
 * Server-Sent Events stream of what changes. GET and HEAD only (405 otherwise); a `Host` header that is not an IP
 * address, localhost or an `allowedHosts` name gets 403 (DNS rebinding); a path naming `.` or `..` (encoded or not)
 * or holding a separator is a 400; only the run directories' own files (`metrics.jsonl`, `trajectories.jsonl`, the
 * config and reports, their real paths inside the run directory) and the page's folder are read. Routes:
 *
 * - `GET /`, `/assets/*` (and the page's other top-level files): the page;
 * - `GET /api/runs` → `{ runs: RunSummary[] }`;
 * - `GET /api/runs/:id/metrics?after=<step>` → `{ records, skipped, skippedCount }`;
 * - `GET /api/runs/:id/episodes?step=&environment=&role=&minReward=&maxReward=&offset=&limit=` →
 *   `{ total, available, episodes, skipped, skippedCount, steps, environments, roles }`;
 * - `GET /api/runs/:id/episodes/:index` → the `TrajectoryRecord` on that line (404 none, 422 invalid, with the reason);
 * - `GET /api/runs/:id/files` → `{ report?, reportFiles, tables }`;
 * - `GET /api/events` → `text/event-stream`: `runs` `{ runs }` (on connecting, and when runs appear, go or change status),
 *   `metrics` `{ run, records, reset?, refetch? }`, `episodes` `{ run, total, reset? }`.
 *
 * Errors are `{ error: { code, message } }`, never a stack trace or a path outside the runs.
 */
export async function startViewServer(options: ViewServerOptions): Promise<ViewServer> {
  const settings = parseArgument(viewServerOptionsSchema, options, 'options')
  const staticDirectory = settings.staticDirectory ?? defaultStaticDirectory()
  const hostAllowed = allowedHostRule(settings.allowedHosts)
  const runs = new Map<string, RunData>()
  const watchers = new Map<string, FSWatcher>()
  const clients = new Set<ServerResponse>()
  let slowClientsCut = 0
  let closed = false

  // Discovery one at a time (a tick and a request may ask together).
  let discovering: Promise<boolean> = Promise.resolve(false)
  const discover = (): Promise<boolean> => {
    const next = discovering
      .catch(() => false)
      .then(async () => {
        const found = await discoverRuns(settings.sources, settings.maxRuns)
        let changed = found.length !== runs.size
        const ids = new Set(found.map((run) => run.id))
        for (const id of runs.keys()) if (!ids.has(id)) runs.delete(id)
        for (const run of found) {
          if (runs.has(run.id)) continue
          changed = true
          runs.set(run.id, new RunData(run, settings))
        }
        syncWatchers()
        return changed
      })
    discovering = next
    return next
  }

  /** Reads what the run's logs gained and tells the event streams. */
  const refreshRun = async (data: RunData) => {
    const [metrics, episodes] = await Promise.all([data.metrics.refresh(), data.episodes.refresh()])
    const run = data.run.id
    if (metrics.reset || metrics.added.length > 0) {
      const reset = metrics.reset ? { reset: true } : {}
      const size = JSON.stringify(metrics.added).length
      broadcast('metrics', size > maxEventRecordsBytes ? { run, records: [], ...reset, refetch: true } : { run, records: metrics.added, ...reset })
    }
    if (episodes.reset || episodes.added.length > 0)
      broadcast('episodes', { run, total: data.episodes.items.length, ...(episodes.reset ? { reset: true } : {}) })
  }

  const runList = async (): Promise<RunSummary[]> => {
    const now = Date.now()
    return Promise.all([...runs.values()].map((data) => data.summary(now)))
  }

  const runOf = async (id: string): Promise<RunData> => {
    await discover()
    const data = runs.get(id)
    if (data === undefined) throw new ViewError(404, 'not_found', `No run with the id ${JSON.stringify(id.slice(0, 100))} (see /api/runs).`)
    await refreshRun(data)
    return data
  }

  // Watching: every tick (and every file-system notification, sooner) while a page listens.
  let lastListKey = ''
  let ticking = false
  let again = false
  const tick = async () => {
    if (clients.size === 0 || closed) return
    if (ticking) {
      again = true
      return
    }
    ticking = true
    try {
      do {
        again = false
        const changed = await discover()
        for (const data of runs.values()) await refreshRun(data)
        const list = await runList()
        const key = list.map((run) => `${run.id}:${run.status}`).join('|')
        if (changed || key !== lastListKey) {
          lastListKey = key
          broadcast('runs', { runs: list })
        }
      } while (again && !closed)
    } catch (error) {
      settings.onError?.(error) // a file that vanished mid-read: the next tick reads again
    } finally {
      ticking = false
    }
  }
  let soon: NodeJS.Timeout | undefined
  const tickSoon = () => {
    if (soon !== undefined || clients.size === 0) return
    soon = setTimeout(() => {
      soon = undefined
      void tick()
    }, 50)
  }
  const poller = setInterval(() => void tick(), settings.pollIntervalMs)
  const heartbeat = setInterval(() => {
    for (const client of clients) write(client, ': heartbeat\n\n')
  }, settings.heartbeatMs)

  /** File-system notifications on the sources and the runs (best effort: the poll covers a platform without them). */
  const syncWatchers = () => {
    const wanted = new Set([...settings.sources.map((source) => source.path), ...[...runs.values()].map((data) => data.run.path)].slice(0, 256))
    for (const [path, watcher] of watchers)
      if (!wanted.has(path)) {
        watcher.close()
        watchers.delete(path)
      }
    for (const path of wanted) {
      if (watchers.has(path) || closed) continue
      try {
        const watcher = watch(path, { persistent: false }, tickSoon)
        watcher.on('error', () => {
          watcher.close()
          watchers.delete(path)
        })
        watchers.set(path, watcher)
      } catch {
        // No notifications here (a limit reached, a platform without them): polling alone.
      }
    }
  }

  /**
   * Writes to an event stream. A client that left more than `maxStreamBufferBytes` unread is cut instead (so one holds
   * at most that plus one event, and an event larger than the limit does not cut a client that reads).
   */
  const write = (client: ServerResponse, text: string) => {
    if (client.destroyed) return clients.delete(client)
    if (client.writableLength > settings.maxStreamBufferBytes) {
      slowClientsCut++
      clients.delete(client)
      return client.destroy()
    }
    client.write(text)
  }
  const broadcast = (event: string, data: unknown) => {
    if (clients.size === 0) return
    const text = `event: ${event}\ndata: ${safeJson(data)}\n\n`
    for (const client of clients) write(client, text)
  }

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const method = request.method ?? 'GET'
    if (!hostAllowed(request.headers.host)) {
      request.resume()
      throw new ViewError(
        403,
        'host_not_allowed',
        `Blocked request: the Host ${JSON.stringify((request.headers.host ?? '').slice(0, 100))} is not allowed (only IP addresses, localhost and ludic view --allowed-host).`,
      )
    }
    if (method !== 'GET' && method !== 'HEAD') {
      request.resume()
      throw new ViewError(405, 'method_not_allowed', `Method ${method.slice(0, 20)} is not allowed: ludic view only reads (GET, HEAD).`, { allow: 'GET, HEAD' })
    }
    const head = method === 'HEAD'
    const { segments, query } = parseTarget(request.url ?? '/')
    if (segments[0] !== 'api') return serveStatic(segments, response, head)
    const [, resource, id, part, index, ...rest] = segments
    if (resource === 'events' && segments.length === 2) {
      noQuery(query)
      return openEvents(request, response, head)
    }
    if (resource !== 'runs' || rest.length > 0) throw notFound(segments)
    if (id === undefined) {
      noQuery(query)
      await discover()
      for (const data of runs.values()) await refreshRun(data)
      return sendJson(response, 200, { runs: await runList() }, head)
    }
    if (part === 'metrics' && index === undefined) {
      const { after } = parseQuery(metricsQuerySchema, query)
      const data = await runOf(id)
      const records = after === undefined ? data.metrics.items : data.metrics.items.filter((record) => record.step > after)
      return sendJson(response, 200, { records, skipped: data.metrics.skipped, skippedCount: data.metrics.skippedCount }, head)
    }
    if (part === 'episodes' && index === undefined) {
      const filters = parseQuery(episodesQuerySchema, query)
      const data = await runOf(id)
      return sendJson(response, 200, episodePage(data, filters), head)
    }
    if (part === 'episodes' && index !== undefined) {
      noQuery(query)
      if (!/^\d{1,15}$/.test(index) || Number(index) < 1)
        throw new ViewError(
          400,
          'bad_request',
          `The episode index must be a line number of trajectories.jsonl (a whole number ≥ 1), not ${JSON.stringify(index.slice(0, 40))}.`,
        )
      const data = await runOf(id)
      const found = await data.episode(Number(index))
      if (found === undefined) throw new ViewError(404, 'not_found', `No episode on line ${index} of trajectories.jsonl.`)
      if ('invalid' in found) throw new ViewError(422, 'invalid_record', `Line ${index} of trajectories.jsonl is not shown: ${found.invalid}.`)
      return sendJson(response, 200, found.record, head)
    }
    if (part === 'files' && index === undefined) {
      noQuery(query)
      const data = await runOf(id)
      return sendJson(response, 200, await readRunFiles(data.run.path, data.metrics.items), head)
    }
    throw notFound(segments)
  }

  const openEvents = async (request: IncomingMessage, response: ServerResponse, head: boolean) => {
    if (clients.size >= settings.maxEventClients)
      throw new ViewError(
        503,
        'too_many_clients',
        `${settings.maxEventClients} pages already follow this server's events (close one, or start ludic view again).`,
      )
    response.writeHead(200, { ...securityHeaders, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' })
    if (head) return void response.end()
    clients.add(response)
    const leave = () => clients.delete(response)
    request.on('close', leave)
    response.on('close', leave)
    write(response, 'retry: 2000\n\n')
    await discover()
    for (const data of runs.values()) await refreshRun(data)
    const list = await runList()
    lastListKey = list.map((run) => `${run.id}:${run.status}`).join('|')
    if (clients.has(response)) write(response, `event: runs\ndata: ${safeJson({ runs: list })}\n\n`)
  }

  const serveStatic = async (segments: string[], response: ServerResponse, head: boolean) => {
    const wantsPage = segments.length === 0 || (segments.length === 1 && segments[0] === 'index.html')
    const root = await realpath(staticDirectory).catch(() => undefined)
    const opened = root === undefined ? ({ status: 'missing' } as const) : await openFileInside(root, wantsPage ? 'index.html' : segments.join('/'))
    if (opened.status !== 'open') {
      if (wantsPage) return sendText(response, 200, 'text/html; charset=utf-8', pageNotBuilt, head)
      throw notFound(segments)
    }
    const type = contentTypes[extname(segments.at(-1) ?? 'index.html').toLowerCase()] ?? 'application/octet-stream'
    response.writeHead(200, { ...securityHeaders, 'content-type': type, 'content-length': String(opened.size), 'cache-control': 'no-cache' })
    if (head || opened.size === 0) {
      await opened.handle.close()
      return void response.end()
    }
    const stream = opened.handle.createReadStream({ start: 0, end: opened.size - 1 })
    stream.on('error', () => response.destroy())
    stream.pipe(response)
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (response.headersSent) return void response.destroy()
      if (error instanceof ViewError) return sendJson(response, error.status, { error: { code: error.code, message: error.message } }, false, error.headers)
      settings.onError?.(error)
      sendJson(response, 500, { error: { code: 'internal', message: 'Internal error (the server log says more).' } }, false)
    })
  })
  server.maxConnections = settings.maxConnections
  server.headersTimeout = 10_000
  server.requestTimeout = 30_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(settings.port, settings.host, () => {
      server.off('error', reject)
      resolve()
    })
  }).catch((error: unknown) => {
    clearInterval(poller)
    clearInterval(heartbeat)
    throw error
  })
  const port = (server.address() as AddressInfo).port
  const host = settings.host.includes(':') ? `[${settings.host}]` : settings.host
  return {
    url: `http://${host}:${port}/`,
    port,
    stats: () => ({ eventClients: clients.size, slowClientsCut }),
    async close() {
      closed = true
      clearInterval(poller)
      clearInterval(heartbeat)
      if (soon !== undefined) clearTimeout(soon)
      for (const watcher of watchers.values()) watcher.close()
      watchers.clear()
      for (const client of clients) client.destroy()
      clients.clear()
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeAllConnections()
      await stopped
    },
  }
}

/** JSON with `<` escaped (`\u003c`): model text never reads as markup, even to a client that sniffs. */
function safeJson(value: unknown): string {
  return JSON.stringify(value).replaceAll('<', '\\u003c')
}

function sendJson(response: ServerResponse, status: number, body: unknown, head: boolean, headers: Record<string, string> = {}): void {
  sendText(response, status, 'application/json; charset=utf-8', safeJson(body), head, { 'cache-control': 'no-store', ...headers })
}

function sendText(response: ServerResponse, status: number, type: string, text: string, head: boolean, headers: Record<string, string> = {}): void {
  response.writeHead(status, { ...securityHeaders, 'content-type': type, 'content-length': String(Buffer.byteLength(text)), ...headers })
  response.end(head ? undefined : text)
}

function notFound(segments: readonly string[]): ViewError {
  return new ViewError(404, 'not_found', `Nothing at /${segments.join('/').slice(0, 200)}.`)
}

/**
 * The request target's path segments (percent-decoded) and query. A target that is not a path, malformed
 * percent-encoding, and a segment that is `.` or `..` or holds `/`, `\` or NUL (in any encoding) are a 400: nothing
 * is looked up with them. Empty segments are dropped.
 */
function parseTarget(target: string): { segments: string[]; query: URLSearchParams } {
  if (!target.startsWith('/') || target.length > 8192) throw new ViewError(400, 'bad_path', 'The request target must be a path.')
  const mark = target.indexOf('?')
  const path = mark === -1 ? target : target.slice(0, mark)
  const segments = path
    .split('/')
    .filter((part) => part !== '') // `//api/runs` is `/api/runs`
    .map((part) => {
      let decoded: string
      try {
        decoded = decodeURIComponent(part)
      } catch {
        throw new ViewError(400, 'bad_path', 'Malformed percent-encoding in the path.')
      }
      if (decoded === '.' || decoded === '..' || /[/\\\0]/.test(decoded))
        throw new ViewError(400, 'bad_path', 'A path segment may not be . or .., nor hold /, \\ or NUL.')
      return decoded
    })
  return { segments, query: new URLSearchParams(mark === -1 ? '' : target.slice(mark + 1)) }
}

function noQuery(query: URLSearchParams): void {
  const first = [...query.keys()][0]
  if (first !== undefined) throw new ViewError(400, 'bad_query', `Unknown query parameter ${JSON.stringify(first.slice(0, 100))}.`)
}

/** The query checked against `schema` (each parameter once; an empty one is as if absent): a 400 naming the parameter otherwise. */
function parseQuery<Schema extends z.ZodType>(schema: Schema, query: URLSearchParams): z.output<Schema> {
  const values: Record<string, string> = {}
  const seen = new Set<string>()
  for (const [name, value] of query) {
    if (seen.has(name)) throw new ViewError(400, 'bad_query', `The query parameter ${JSON.stringify(name.slice(0, 100))} is given twice.`)
    seen.add(name)
    if (value !== '') values[name] = value
  }
  const parsed = schema.safeParse(values)
  if (parsed.success) return parsed.data
  const issue = parsed.error.issues[0]!
  const name = issue.code === 'unrecognized_keys' ? (issue as { keys: string[] }).keys[0] : String(issue.path[0])
  const message = issue.code === 'unrecognized_keys' ? 'unknown' : issue.message
  throw new ViewError(400, 'bad_query', `Query parameter ${JSON.stringify((name ?? '').slice(0, 100))}: ${message}.`)
}

/** One page of a run's episodes, filtered; and what the filters can choose from. */
function episodePage(data: RunData, filters: z.output<typeof episodesQuerySchema>) {
  const all = data.episodes.items
  const inRange = (value: number | undefined) =>
    value !== undefined && (filters.minReward === undefined || value >= filters.minReward) && (filters.maxReward === undefined || value <= filters.maxReward)
  const rewardFilter = filters.minReward !== undefined || filters.maxReward !== undefined
  const matching = all.filter(
    (episode) =>
      (filters.step === undefined || episode.step === filters.step) &&
      (filters.environment === undefined || episode.environmentId === filters.environment) &&
      (filters.role === undefined || episode.roles.includes(filters.role)) &&
      // A reward range applies to the role's return, or without a role to any role's.
      (!rewardFilter || (filters.role === undefined ? Object.values(episode.returns).some((value) => inRange(value)) : inRange(episode.returns[filters.role]))),
  )
  const offset = filters.offset ?? 0
  const episodes: EpisodeSummary[] = matching
    .slice(offset, offset + (filters.limit ?? 50))
    .map(({ index, step, environmentId, roles, returns, turnCount, trainer }) => ({ index, step, environmentId, roles, returns, turnCount, trainer }))
  return {
    total: matching.length,
    available: all.length,
    episodes,
    skipped: data.episodes.skipped,
    skippedCount: data.episodes.skippedCount,
    steps: [...new Set(all.map((episode) => episode.step))].sort((a, b) => a - b),
    environments: [...new Set(all.map((episode) => episode.environmentId))].sort(),
    roles: [...new Set(all.flatMap((episode) => episode.roles))].sort(),
  }
}
