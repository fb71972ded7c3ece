import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join, relative, sep } from 'node:path'

/**
 * A loopback stand-in for the Hugging Face Hub, for tests: it answers the routes Ludic's and Python's
 * `huggingface_hub` clients use, with the Hub's headers and error codes:
 *
 * - `GET /api/models/<owner>/<name>/revision/<revision>`: `{ id, sha, siblings: [{ rfilename }], gated, private, … }`;
 * - `HEAD`/`GET /<owner>/<name>/resolve/<revision>/<file>`: a plain file answers 200 with `ETag` (its git blob
 *   SHA-1), `X-Repo-Commit`, `Content-Length` and byte ranges; an LFS file (`.safetensors` and other weights)
 *   answers 302 to the CDN route with `X-Linked-Etag` (its SHA-256), `X-Linked-Size` and `X-Repo-Commit`;
 * - `HEAD`/`GET /cdn/<sha256>` on another host name (`localhost` for a server on `127.0.0.1`), as the Hub's CDN:
 *   the bytes, with byte ranges, no token needed;
 * - errors as the Hub sends them, with `X-Error-Code` and `X-Error-Message`: `RepoNotFound` (401 without a token,
 *   404 with one), `RevisionNotFound` (404), `EntryNotFound` (404, with `X-Repo-Commit`), `GatedRepo` (401 without
 *   a token, 403 with a token not granted access), and 401 `Invalid credentials in Authorization header` for a
 *   token it does not know.
 *
 * Faults can be injected (a connection cut, stalled or paused part-way through a file, a body sent a byte at a
 * time, a corrupted byte, a range ignored, an error status) and every request is recorded.
 */

export type FakeHubContent = string | Uint8Array

export interface FakeHubRepoInput {
  /** `owner/name`. */
  id: string
  /** The files of branch `main`, by path. */
  files: Readonly<Record<string, FakeHubContent>>
  /** Other branches or tags, each with its files (and so its own commit). */
  revisions?: Readonly<Record<string, Readonly<Record<string, FakeHubContent>>>>
  /** Gated: the listing is public, files need a token in `grantedTokens`. */
  gated?: boolean
  /** Private: the repository looks missing without a token in `grantedTokens`. */
  private?: boolean
  /** Tokens granted access to a gated or private repository. */
  grantedTokens?: readonly string[]
}

export interface FakeHubOptions {
  repos: readonly FakeHubRepoInput[]
  /** Tokens the Hub knows (besides every repository's `grantedTokens`); any other token is a 401 invalid-credentials answer. Default: none. */
  tokens?: readonly string[]
  /** Which files are LFS files (served through the CDN with a SHA-256 etag). Default: weights (`.safetensors`, `.bin`, `.pt`, `.gguf`, `.onnx`) and files over 10 MiB. */
  lfs?: (path: string, size: number) => boolean
  /** Host name of the CDN route. Default: `'localhost'` (the server listens on `127.0.0.1`, so clients take it for another host). */
  cdnHost?: string
  /**
   * The origin LFS files are redirected to, e.g. another fake Hub's `endpoint` (which serves the same blobs on its
   * `/cdn/<sha256>` route). Default: `http://<cdnHost>:<this server's port>`.
   */
  cdnOrigin?: string
}

export type FakeHubFault =
  /** The connection is closed after `afterBytes` bytes of the file's body. */
  | { kind: 'cut'; file: string; afterBytes: number; times?: number }
  /** The body stops after `afterBytes` bytes and the connection stays open, silent. */
  | { kind: 'stall'; file: string; afterBytes: number; times?: number }
  /** The first byte sent of the file is flipped. */
  | { kind: 'corrupt'; file: string; times?: number }
  /** A `Range` request for the file gets the whole file (200). */
  | { kind: 'ignore-range'; file: string; times?: number }
  /** The body stops after `afterBytes` bytes, the connection open, until `releasePaused()` sends the rest. */
  | { kind: 'pause'; file: string; afterBytes: number; times?: number }
  /** The body comes `bytes` bytes (default 1) every `intervalMs`: never silent long, never done soon. */
  | { kind: 'drip'; file: string; intervalMs: number; bytes?: number; times?: number }
  /** A route answers `status` (for all files, or one). */
  | { kind: 'status'; route: 'api' | 'resolve' | 'cdn'; status: number; file?: string; times?: number }

export interface FakeHubRequest {
  method: string
  /** Host name the request was sent to (`127.0.0.1` for the Hub, the CDN host otherwise). */
  host: string
  /** Decoded path (repository id, revision, file) as the route saw it. */
  path: string
  range: string | undefined
  authorization: string | undefined
  status: number
}

export interface FakeHubFileInfo {
  size: number
  sha256: string
  /** Git blob SHA-1: the `ETag` of a plain file. */
  gitSha1: string
  lfs: boolean
}

export interface FakeHub {
  /** `http://127.0.0.1:<port>`: pass as `endpoint` (or `HF_ENDPOINT`). */
  endpoint: string
  /** Every request answered so far. */
  requests: FakeHubRequest[]
  /** The commit hash a revision (default `main`) points to. */
  commitOf(repoId: string, revision?: string): string
  fileInfo(repoId: string, file: string, revision?: string): FakeHubFileInfo
  injectFault(fault: FakeHubFault): void
  /** Sends the rest of every body a `pause` fault stopped; returns how many there were. */
  releasePaused(): number
  close(): Promise<void>
}

interface StoredFile extends FakeHubFileInfo {
  path: string
  bytes: Uint8Array
}

interface StoredRevision {
  commit: string
  files: Map<string, StoredFile>
}

interface StoredRepo {
  input: FakeHubRepoInput
  revisions: Map<string, StoredRevision>
}

const weightsExtension = /\.(safetensors|bin|pt|pth|gguf|onnx|h5|msgpack)$/

function toBytes(content: FakeHubContent): Uint8Array {
  return typeof content === 'string' ? new TextEncoder().encode(content) : content
}

function gitBlobSha1(bytes: Uint8Array): string {
  return createHash('sha1').update(`blob ${bytes.byteLength}\0`).update(bytes).digest('hex')
}

function lfsPointer(sha256: string, size: number): Uint8Array {
  return new TextEncoder().encode(`version https://git-lfs.github.com/spec/v1\noid sha256:${sha256}\nsize ${size}\n`)
}

/** Reads every file under `directory` (recursively) into a `files` record for `createFakeHub`. */
export async function filesFromDirectory(directory: string): Promise<Record<string, Uint8Array>> {
  const files: Record<string, Uint8Array> = {}
  for (const entry of await readdir(directory, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue
    const path = join(entry.parentPath, entry.name)
    files[relative(directory, path).split(sep).join('/')] = new Uint8Array(await readFile(path))
  }
  return files
}

/** Starts a fake Hub on a free loopback port. */
export async function createFakeHub(options: FakeHubOptions): Promise<FakeHub> {
  const isLfs = options.lfs ?? ((path: string, size: number) => weightsExtension.test(path) || size > 10 * 2 ** 20)
  const repos = new Map<string, StoredRepo>()
  const blobs = new Map<string, StoredFile>()
  const knownTokens = new Set(options.tokens ?? [])
  for (const input of options.repos) {
    for (const token of input.grantedTokens ?? []) knownTokens.add(token)
    const revisions = new Map<string, StoredRevision>()
    for (const [revision, contents] of Object.entries({ main: input.files, ...input.revisions })) {
      const files = new Map<string, StoredFile>()
      for (const [path, content] of Object.entries(contents)) {
        const bytes = toBytes(content)
        const sha256 = createHash('sha256').update(bytes).digest('hex')
        const file: StoredFile = { path, bytes, size: bytes.byteLength, sha256, gitSha1: gitBlobSha1(bytes), lfs: isLfs(path, bytes.byteLength) }
        files.set(path, file)
        blobs.set(sha256, file)
      }
      const listing = [...files.values()].map((file) => `${file.path}\0${file.sha256}\n`).sort()
      const commit = createHash('sha1')
        .update(`${input.id}@${revision}\n${listing.join('')}`)
        .digest('hex')
      const stored = { commit, files }
      revisions.set(revision, stored)
      revisions.set(commit, stored)
    }
    repos.set(input.id, { input, revisions })
  }

  const faults: (FakeHubFault & { left: number })[] = []
  const pausedBodies: (() => void)[] = []
  const requests: FakeHubRequest[] = []
  const takeFault = (match: (fault: FakeHubFault) => boolean): FakeHubFault | undefined => {
    const fault = faults.find((candidate) => candidate.left > 0 && match(candidate))
    if (fault !== undefined) fault.left--
    return fault
  }

  const server = createServer((request, response) => {
    try {
      handle(request, response)
    } catch (error) {
      response.statusCode = 500
      response.end(String(error))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  const endpoint = `http://127.0.0.1:${port}`
  const cdnOrigin = (options.cdnOrigin ?? `http://${options.cdnHost ?? 'localhost'}:${port}`).replace(/\/+$/, '')

  function record(request: IncomingMessage, path: string, status: number): void {
    requests.push({
      method: request.method ?? 'GET',
      host: (request.headers.host ?? '').replace(/:\d+$/, ''),
      path,
      range: request.headers.range,
      authorization: request.headers.authorization,
      status,
    })
  }

  function sendError(
    request: IncomingMessage,
    response: ServerResponse,
    path: string,
    status: number,
    code: string | undefined,
    message: string,
    extra: Record<string, string> = {},
  ): void {
    const body = JSON.stringify({ error: message })
    response.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'x-error-message': message,
      ...(code === undefined ? {} : { 'x-error-code': code }),
      ...extra,
    })
    record(request, path, status)
    response.end(request.method === 'HEAD' ? undefined : body)
  }

  /** The repository and revision a request names, or the error it gets (written, `undefined` returned). */
  function access(
    request: IncomingMessage,
    response: ServerResponse,
    path: string,
    repoId: string,
    revision: string,
    forFiles: boolean,
  ): StoredRevision | undefined {
    const authorization = request.headers.authorization
    const token = authorization?.startsWith('Bearer ') ? authorization.slice('Bearer '.length) : undefined
    if (token !== undefined && !knownTokens.has(token)) {
      sendError(request, response, path, 401, undefined, 'Invalid credentials in Authorization header')
      return undefined
    }
    const repo = repos.get(repoId)
    const granted = token !== undefined && (repo?.input.grantedTokens ?? []).includes(token)
    if (repo === undefined || (repo.input.private === true && !granted)) {
      sendError(
        request,
        response,
        path,
        token === undefined ? 401 : 404,
        'RepoNotFound',
        token === undefined ? 'Invalid username or password.' : 'Repository not found',
      )
      return undefined
    }
    const stored = repo.revisions.get(revision)
    if (stored === undefined) {
      sendError(request, response, path, 404, 'RevisionNotFound', `Invalid rev id: ${revision}`)
      return undefined
    }
    if (forFiles && repo.input.gated === true && !granted) {
      if (token === undefined) {
        sendError(
          request,
          response,
          path,
          401,
          'GatedRepo',
          `Access to model ${repoId} is restricted. You must have access to it and be authenticated to access it. Please log in.`,
        )
      } else {
        sendError(
          request,
          response,
          path,
          403,
          'GatedRepo',
          `Access to model ${repoId} is restricted and you are not in the authorized list. Visit ${endpoint}/${repoId} to ask for access.`,
        )
      }
      return undefined
    }
    return stored
  }

  function statusFault(route: 'api' | 'resolve' | 'cdn', file: string | undefined): number | undefined {
    const fault = takeFault(
      (candidate) => candidate.kind === 'status' && candidate.route === route && (candidate.file === undefined || candidate.file === file),
    )
    return fault?.kind === 'status' ? fault.status : undefined
  }

  /** Sends a file's bytes (all, or the range asked for), applying the faults injected for it. */
  function sendBytes(request: IncomingMessage, response: ServerResponse, path: string, file: StoredFile, headers: Record<string, string>): void {
    const size = file.size
    let start = 0
    let end = size - 1
    let status = 200
    const range = /^bytes=(\d+)-(\d*)$/.exec(request.headers.range ?? '')
    if (range !== null && takeFault((fault) => fault.kind === 'ignore-range' && fault.file === file.path) === undefined) {
      start = Number(range[1])
      end = range[2] === '' ? size - 1 : Math.min(Number(range[2]), size - 1)
      if (start >= size) {
        response.writeHead(416, { 'content-range': `bytes */${size}`, ...headers })
        record(request, path, 416)
        response.end()
        return
      }
      status = 206
      headers['content-range'] = `bytes ${start}-${end}/${size}`
    }
    const body = Buffer.from(file.bytes.subarray(start, end + 1))
    response.writeHead(status, { 'content-length': String(body.byteLength), 'accept-ranges': 'bytes', 'content-type': 'application/octet-stream', ...headers })
    record(request, path, status)
    if (request.method === 'HEAD') {
      response.end()
      return
    }
    if (takeFault((fault) => fault.kind === 'corrupt' && fault.file === file.path) !== undefined && body.byteLength > 0) body[0] = body[0]! ^ 0xff
    const paused = takeFault((fault) => fault.kind === 'pause' && fault.file === file.path)
    if (paused?.kind === 'pause') {
      response.flushHeaders()
      response.write(body.subarray(0, Math.min(paused.afterBytes, body.byteLength)))
      pausedBodies.push(() => response.end(body.subarray(Math.min(paused.afterBytes, body.byteLength))))
      return
    }
    const drip = takeFault((fault) => fault.kind === 'drip' && fault.file === file.path)
    if (drip?.kind === 'drip') {
      response.flushHeaders()
      let sent = 0
      const timer = setInterval(() => {
        const next = Math.min(sent + (drip.bytes ?? 1), body.byteLength)
        response.write(body.subarray(sent, next))
        sent = next
        if (sent === body.byteLength) {
          clearInterval(timer)
          response.end()
        }
      }, drip.intervalMs)
      response.on('close', () => clearInterval(timer))
      return
    }
    const cut = takeFault((fault) => (fault.kind === 'cut' || fault.kind === 'stall') && fault.file === file.path)
    if (cut !== undefined && (cut.kind === 'cut' || cut.kind === 'stall')) {
      response.flushHeaders()
      response.write(body.subarray(0, Math.min(cut.afterBytes, body.byteLength)), () => {
        if (cut.kind === 'cut') response.socket?.destroy()
      })
      return
    }
    response.end(body)
  }

  function handle(request: IncomingMessage, response: ServerResponse): void {
    const url = new URL(request.url ?? '/', endpoint)
    const segments = url.pathname.split('/').slice(1).map(decodeURIComponent)
    const path = segments.join('/')
    if (segments[0] === 'api' && segments[1] === 'models' && segments.length >= 4) {
      const repoId = `${segments[2]}/${segments[3]}`
      const revision = segments[4] === 'revision' && segments.length === 6 ? segments[5]! : 'main'
      const faultStatus = statusFault('api', undefined)
      if (faultStatus !== undefined) {
        sendError(request, response, path, faultStatus, undefined, 'Internal Error')
        return
      }
      const stored = access(request, response, path, repoId, revision, false)
      if (stored === undefined) return
      const repo = repos.get(repoId)!.input
      const body = JSON.stringify({
        _id: createHash('sha1').update(repoId).digest('hex').slice(0, 24),
        id: repoId,
        modelId: repoId,
        author: repoId.split('/')[0],
        sha: stored.commit,
        lastModified: '2025-01-01T00:00:00.000Z',
        private: repo.private === true,
        disabled: false,
        gated: repo.gated === true ? 'manual' : false,
        tags: [],
        downloads: 0,
        likes: 0,
        library_name: 'transformers',
        siblings: [...stored.files.keys()].sort().map((rfilename) => ({ rfilename })),
        createdAt: '2025-01-01T00:00:00.000Z',
      })
      response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) })
      record(request, path, 200)
      response.end(body)
      return
    }
    if (segments[0] === 'cdn' && segments.length === 2) {
      const file = blobs.get(segments[1]!)
      const faultStatus = statusFault('cdn', file?.path)
      if (faultStatus !== undefined) {
        sendError(request, response, path, faultStatus, undefined, 'Service Unavailable')
        return
      }
      if (file === undefined) {
        sendError(request, response, path, 404, undefined, 'Not Found')
        return
      }
      sendBytes(request, response, path, file, { etag: `"${file.sha256}"` })
      return
    }
    if (segments[2] === 'resolve' && segments.length >= 5) {
      const repoId = `${segments[0]}/${segments[1]}`
      const revision = segments[3]!
      const filePath = segments.slice(4).join('/')
      const faultStatus = statusFault('resolve', filePath)
      if (faultStatus !== undefined) {
        sendError(request, response, path, faultStatus, undefined, 'Internal Error')
        return
      }
      const stored = access(request, response, path, repoId, revision, true)
      if (stored === undefined) return
      const file = stored.files.get(filePath)
      if (file === undefined) {
        sendError(request, response, path, 404, 'EntryNotFound', 'Entry not found', { 'x-repo-commit': stored.commit })
        return
      }
      if (file.lfs) {
        const location = `${cdnOrigin}/cdn/${file.sha256}`
        const body = `Found. Redirecting to ${location}`
        response.writeHead(302, {
          location,
          'x-repo-commit': stored.commit,
          'x-linked-etag': `"${file.sha256}"`,
          'x-linked-size': String(file.size),
          etag: `"${gitBlobSha1(lfsPointer(file.sha256, file.size))}"`,
          'content-type': 'text/plain; charset=utf-8',
          'content-length': String(Buffer.byteLength(body)),
        })
        record(request, path, 302)
        response.end(request.method === 'HEAD' ? undefined : body)
        return
      }
      sendBytes(request, response, path, file, { etag: `"${file.gitSha1}"`, 'x-repo-commit': stored.commit })
      return
    }
    sendError(request, response, path, 404, undefined, 'Not Found')
  }

  const revisionOf = (repoId: string, revision: string): StoredRevision => {
    const stored = repos.get(repoId)?.revisions.get(revision)
    if (stored === undefined) throw new Error(`the fake Hub has no ${repoId}@${revision}`)
    return stored
  }

  return {
    endpoint,
    requests,
    commitOf: (repoId, revision = 'main') => revisionOf(repoId, revision).commit,
    fileInfo: (repoId, file, revision = 'main') => {
      const stored = revisionOf(repoId, revision).files.get(file)
      if (stored === undefined) throw new Error(`the fake Hub has no ${file} in ${repoId}@${revision}`)
      return { size: stored.size, sha256: stored.sha256, gitSha1: stored.gitSha1, lfs: stored.lfs }
    },
    injectFault: (fault) => {
      faults.push({ ...fault, left: fault.times ?? 1 })
    },
    releasePaused: () => {
      const bodies = pausedBodies.splice(0)
      for (const send of bodies) send()
      return bodies.length
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
