import { ParseError } from '@ludic/core'
import { HubError } from './hub-error.js'

/** What every request of one `downloadRepo` call shares. */
export interface HubRequestContext {
  repoId: string
  revision: string
  endpoint: string
  token: string | undefined
  fetch: typeof fetch
  signal: AbortSignal | undefined
  /** Longest wait for an answer, and between two pieces of a body. */
  timeoutMs: number
  /** The overall limit of one file's download (`fileTimeoutMs`), when a request belongs to one. */
  deadline?: Deadline
}

/** An overall time limit: `signal` aborts once `ms` have passed since `startDeadline`; `dispose()` stops the clock. */
export interface Deadline {
  signal: AbortSignal
  ms: number
  expired: () => boolean
  dispose: () => void
}

export function startDeadline(ms: number): Deadline {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(new Error(`past the deadline of ${ms} ms`)), ms)
  return { signal: controller.signal, ms, expired: () => controller.signal.aborted, dispose: () => clearTimeout(timer) }
}

/** The `network` error of a download or request that took longer than `fileTimeoutMs` (waiting for another process included): `subject` says which. */
export function deadlineError(context: HubRequestContext, subject: string, file?: string): HubError {
  return new HubError({
    reason: 'network',
    repoId: context.repoId,
    revision: context.revision,
    ...(file === undefined ? {} : { file }),
    message: `${subject} took longer than fileTimeoutMs (${context.deadline?.ms ?? '?'} ms).`,
  })
}

const userAgent = 'ludic-hub; node'

/**
 * Whether `url` is on the Hub's own origin (scheme, host and port, compared as browsers compare them): only there
 * is the token sent, never to a CDN a download is redirected to, another port of the same host, or the same host
 * over plain `http` when the Hub is `https`.
 */
export function isHubOrigin(endpoint: string, url: string): boolean {
  return new URL(url).origin === new URL(endpoint).origin
}

function describeCause(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause
  if (typeof cause?.code === 'string') return cause.code
  if (typeof cause?.message === 'string') return cause.message
  return error instanceof Error ? error.message : String(error)
}

/**
 * An `AbortSignal` for one request: aborted by the caller's signal, the file's deadline, or `timeoutMs` of silence. `touch()`
 * restarts the clock (call it for each piece of a body); `dispose()` stops it.
 */
export function idleTimeout(context: HubRequestContext): { signal: AbortSignal; touch: () => void; dispose: () => void; timedOut: () => boolean } {
  const controller = new AbortController()
  let timedOut = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const touch = () => {
    clearTimeout(timer)
    timer = setTimeout(() => {
      timedOut = true
      controller.abort(new Error(`no data for ${context.timeoutMs} ms`))
    }, context.timeoutMs)
  }
  touch()
  const others = [context.signal, context.deadline?.signal].filter((signal) => signal !== undefined)
  const signal = others.length === 0 ? controller.signal : AbortSignal.any([...others, controller.signal])
  return { signal, touch, dispose: () => clearTimeout(timer), timedOut: () => timedOut }
}

/** The error for a request that threw: the caller's abort reason as it is, else a `network` `HubError` (the deadline's, when it passed). */
export function requestFailure(context: HubRequestContext, error: unknown, timedOut: boolean, what: string, file?: string): unknown {
  if (context.signal?.aborted) return context.signal.reason
  if (context.deadline?.expired())
    return deadlineError(context, file !== undefined && what === `download ${file}` ? `The download of ${file}` : `The request to ${what}`, file)
  const detail = timedOut ? `no answer for ${context.timeoutMs} ms` : describeCause(error)
  return new HubError({
    reason: 'network',
    repoId: context.repoId,
    revision: context.revision,
    ...(file === undefined ? {} : { file }),
    message: `Cannot ${what} from ${context.endpoint} (${detail}). If this machine is offline, set HF_HUB_OFFLINE=1 to use the cache only.`,
    cause: error,
  })
}

/**
 * One request to the Hub or its CDN. The token goes only to the Hub's host; `Accept-Encoding: identity` keeps
 * sizes and byte ranges those of the file. Returns the response with its body unread and the idle-timeout
 * handle, which the caller disposes once the body is read.
 */
export async function hubRequest(
  context: HubRequestContext,
  url: string,
  init: { method: 'GET' | 'HEAD'; range?: number; redirect?: 'follow' | 'manual' },
  what: string,
  file?: string,
): Promise<{ response: Response; timeout: ReturnType<typeof idleTimeout> }> {
  const headers: Record<string, string> = { 'user-agent': userAgent, 'accept-encoding': 'identity' }
  if (context.token !== undefined && isHubOrigin(context.endpoint, url)) headers.authorization = `Bearer ${context.token}`
  if (init.range !== undefined && init.range > 0) headers.range = `bytes=${init.range}-`
  const timeout = idleTimeout(context)
  try {
    const response = await context.fetch(url, { method: init.method, headers, redirect: init.redirect ?? 'follow', signal: timeout.signal })
    timeout.touch()
    return { response, timeout }
  } catch (error) {
    timeout.dispose()
    throw requestFailure(context, error, timeout.timedOut(), what, file)
  }
}

/**
 * The typed error for an answer that is not a success, read from the Hub's `X-Error-Code` and `X-Error-Message`
 * headers the way Python's `hf_raise_for_status` reads them.
 */
export function responseError(context: HubRequestContext, response: Response, file?: string): HubError {
  const code = response.headers.get('x-error-code')
  const hubMessage = response.headers.get('x-error-message')
  const { repoId, revision, endpoint } = context
  const status = response.status
  const base = { repoId, revision, status, ...(file === undefined ? {} : { file }) }
  const page = `${endpoint}/${repoId}`
  const tokenState = context.token === undefined ? 'no token was sent' : 'the token sent has not been granted access'
  if (code === 'GatedRepo') {
    return new HubError({
      ...base,
      reason: 'gated',
      message: `Repository ${repoId} is gated (${status}: ${tokenState}). Accept its conditions at ${page} while logged in, then set HF_TOKEN to an access token of that account (or run \`hf auth login\`).`,
    })
  }
  if (status === 401 && hubMessage === 'Invalid credentials in Authorization header') {
    return new HubError({
      ...base,
      reason: 'unauthorized',
      message: `The Hub refused the token (401: invalid credentials). Check HF_TOKEN (or the token file written by \`hf auth login\`): it is wrong, revoked or expired.`,
    })
  }
  if (code === 'RevisionNotFound') {
    return new HubError({
      ...base,
      reason: 'missing',
      message: `Revision '${revision}' not found in repository ${repoId} (${status}). Check the branch, tag or commit at ${page}.`,
    })
  }
  if (code === 'EntryNotFound' || (status === 404 && file !== undefined && code === null)) {
    return new HubError({
      ...base,
      reason: 'missing',
      message: `File '${file ?? '?'}' not found in repository ${repoId} at revision '${revision}' (${status}).`,
    })
  }
  if (code === 'RepoNotFound' || status === 401 || status === 404) {
    const hint = context.token === undefined ? 'if it is private, set HF_TOKEN to a token that can read it' : 'if it is private, the token sent cannot read it'
    return new HubError({
      ...base,
      reason: 'missing',
      message: `Repository ${repoId} not found on ${endpoint} (${status}), and no local folder of that name exists: check the id; ${hint}.`,
    })
  }
  if (hubMessage === 'Access to this resource is disabled.') {
    return new HubError({ ...base, reason: 'missing', message: `Repository ${repoId} is disabled on the Hub (${status}).` })
  }
  if (status === 403) {
    return new HubError({
      ...base,
      reason: 'unauthorized',
      message: `The Hub forbids this (403${hubMessage === null ? '' : `: ${hubMessage}`}): the token lacks the permission to read ${repoId}.`,
    })
  }
  const kind = status === 429 ? 'rate-limited the request' : status >= 500 ? 'failed' : 'answered unexpectedly'
  return new HubError({
    ...base,
    reason: 'network',
    message: `The Hub ${kind} (${status}${hubMessage === null ? '' : `: ${hubMessage}`}) for ${file === undefined ? repoId : `${repoId}/${file}`}; try again later.`,
  })
}

/** Reads a whole body of at most `maxBytes` (refused from `Content-Length` before reading, or once exceeded). */
export async function readBody(
  context: HubRequestContext,
  response: Response,
  timeout: ReturnType<typeof idleTimeout>,
  source: string,
  maxBytes: number,
): Promise<Buffer> {
  try {
    const announced = Number(response.headers.get('content-length') ?? Number.NaN)
    if (announced > maxBytes) throw new ParseError({ source, message: `is ${announced} bytes, more than the limit of ${maxBytes} bytes (maxJsonBytes)` })
    const pieces: Buffer[] = []
    let length = 0
    if (response.body !== null) {
      for await (const piece of response.body) {
        timeout.touch()
        length += piece.byteLength
        if (length > maxBytes) throw new ParseError({ source, message: `is more than the limit of ${maxBytes} bytes (maxJsonBytes)` })
        pieces.push(Buffer.from(piece))
      }
    }
    return Buffer.concat(pieces)
  } catch (error) {
    if (ParseError.isInstance(error)) throw error
    throw requestFailure(context, error, timeout.timedOut(), `read ${source}`)
  } finally {
    timeout.dispose()
  }
}

/** `JSON.parse` whose failure is a `ParseError` naming the source. */
export function parseJson(text: string, source: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch (error) {
    throw new ParseError({ source, message: `not valid JSON (${error instanceof Error ? error.message : String(error)})`, cause: error })
  }
}
