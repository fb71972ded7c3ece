import { createHash, type Hash } from 'node:crypto'
import { constants, createReadStream } from 'node:fs'
import { mkdir, open, rename, rm, stat } from 'node:fs/promises'
import { dirname } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { ParseError } from '@ludic/core'
import { blobPath } from './cache-layout.js'
import { HubError } from './hub-error.js'
import { type HubRequestContext, hubRequest, requestFailure, responseError } from './hub-http.js'

/** What a `HEAD` of `resolve/<commit>/<file>` tells: where to download from, the blob name, the size. */
export interface FileMetadata {
  file: string
  /** The Hub's `X-Repo-Commit`. */
  commit: string
  /** `X-Linked-Etag` (an LFS file's SHA-256), else `ETag`, without quotes or `W/`: the blob's name in the cache. */
  etag: string
  /** `X-Linked-Size`, else `Content-Length` of a direct answer. */
  size: number
  /** Where the bytes are: the CDN address of a redirect, else the resolve address itself. */
  url: string
  /** Whether the etag is an LFS SHA-256 the downloaded bytes can be checked against. */
  sha256: boolean
}

const maxRedirects = 10

/** Python's `_normalize_etag`: `W/"abc"` and `"abc"` become `abc`. */
export function normalizeEtag(etag: string): string {
  return etag.replace(/^W\//, '').replace(/^"+|"+$/g, '')
}

/** `resolve/<revision>/<file>` on the endpoint, the revision encoded as one path segment and each file segment encoded. */
export function resolveUrl(endpoint: string, repoId: string, revision: string, file: string): string {
  return `${endpoint}/${repoId}/resolve/${encodeURIComponent(revision)}/${file.split('/').map(encodeURIComponent).join('/')}`
}

/**
 * `HEAD resolve/<commit>/<file>` as Python's `get_hf_file_metadata` does it: redirects on the Hub's own host are
 * followed (a renamed repository), a redirect elsewhere (the CDN) is not, its headers carry the metadata.
 */
export async function fetchFileMetadata(context: HubRequestContext, commit: string, file: string, maxFileBytes: number): Promise<FileMetadata> {
  let url = resolveUrl(context.endpoint, context.repoId, commit, file)
  for (let redirects = 0; ; redirects++) {
    const { response, timeout } = await hubRequest(context, url, { method: 'HEAD', redirect: 'manual' }, `get the metadata of ${file}`, file)
    timeout.dispose()
    await response.body?.cancel()
    if (response.status >= 400 || response.status < 200) throw responseError(context, response, file)
    const location = response.headers.get('location')
    const isRedirect = response.status >= 300 && location !== null
    const target = isRedirect ? new URL(location, url).href : url
    if (isRedirect && new URL(target).hostname === new URL(url).hostname) {
      if (redirects >= maxRedirects) throw hubAnswerError(context, file, `more than ${maxRedirects} redirects`)
      url = target
      continue
    }
    const repoCommit = response.headers.get('x-repo-commit')
    const linkedEtag = response.headers.get('x-linked-etag')
    const rawEtag = linkedEtag ?? response.headers.get('etag')
    const sizeText = response.headers.get('x-linked-size') ?? (isRedirect ? null : response.headers.get('content-length'))
    if (repoCommit === null)
      throw hubAnswerError(context, file, 'no X-Repo-Commit header: the endpoint does not look like a Hugging Face Hub (check HF_ENDPOINT, proxies)')
    if (rawEtag === null) throw hubAnswerError(context, file, 'no ETag header')
    const etag = normalizeEtag(rawEtag)
    if (!/^[0-9A-Za-z_-]{1,128}$/.test(etag))
      throw new ParseError({ source: url, path: ['ETag'], message: `${JSON.stringify(etag)} is not a blob name (letters, digits, '-', '_')` })
    const size = sizeText === null ? Number.NaN : Number(sizeText)
    if (!Number.isSafeInteger(size) || size < 0)
      throw new ParseError({ source: url, path: ['X-Linked-Size'], message: `${JSON.stringify(sizeText)} is not a file size` })
    if (size > maxFileBytes)
      throw new ParseError({ source: url, path: ['X-Linked-Size'], message: `${file} is ${size} bytes, more than maxFileBytes (${maxFileBytes})` })
    return { file, commit: repoCommit, etag, size, url: target, sha256: linkedEtag !== null && /^[0-9a-f]{64}$/.test(etag) }
  }
}

function hubAnswerError(context: HubRequestContext, file: string, detail: string): HubError {
  return new HubError({
    reason: 'network',
    repoId: context.repoId,
    revision: context.revision,
    file,
    message: `The answer of ${context.endpoint} for ${context.repoId}/${file} is not a Hub answer: ${detail}.`,
  })
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size
  } catch {
    return -1
  }
}

/** Feeds the first `length` bytes of `path` to `hash`. */
async function hashPrefix(hash: Hash, path: string, length: number): Promise<void> {
  if (length === 0) return
  for await (const piece of createReadStream(path, { start: 0, end: length - 1 })) hash.update(piece as Buffer)
}

/** Waits before retry `attempt` (1, 2, …) of a transfer that made no progress: 0.5 s, 1 s, 2 s, … at most 8 s; an abort ends the wait. */
function backOff(attempt: number, signal: AbortSignal | undefined): Promise<void> {
  return delay(Math.min(500 * 2 ** (attempt - 1), 8000), undefined, signal === undefined ? {} : { signal })
}

/** Where the `Content-Range` of a 206 answer starts, `undefined` when it has none. */
function rangeStart(response: Response): number | undefined {
  const match = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(response.headers.get('content-range') ?? '')
  return match === null ? undefined : Number(match[1])
}

/**
 * Downloads one file into `blobs/<etag>`, through `blobs/<etag>.incomplete`: bytes already there (from an
 * interrupted call, Ludic's or an older Python's) are kept and the rest asked for with `Range: bytes=<n>-`;
 * a server that ignores the range restarts the file. A transfer cut, stalled or answered 429/5xx is resumed the
 * same way up to `retries` times within the call (after a pause doubling from 0.5 s when the last attempt brought
 * no bytes); past that the partial file stays for the next call. Bytes are written at
 * their offsets (not appended), so two processes fetching the same blob write the same bytes. The result is
 * checked against the announced size and, for LFS files, the SHA-256 the etag is; a mismatch deletes the
 * partial file and is an `integrity` `HubError`. Returns `false` when the blob was already there (nothing downloaded).
 */
export async function downloadBlob(
  context: HubRequestContext,
  storage: string,
  metadata: FileMetadata,
  retries: number,
  onBytes: (bytesDone: number) => void,
): Promise<boolean> {
  const blob = blobPath(storage, metadata.etag)
  if ((await sizeOf(blob)) >= 0) return false
  const incomplete = `${blob}.incomplete`
  await mkdir(dirname(blob), { recursive: true })
  const handle = await open(incomplete, constants.O_WRONLY | constants.O_CREAT)
  let position = Math.max(0, await sizeOf(incomplete))
  let hash = metadata.sha256 ? createHash('sha256') : undefined
  const restart = async () => {
    await handle.truncate(0)
    position = 0
    hash = metadata.sha256 ? createHash('sha256') : undefined
  }
  /** The error that ends the call: `failure`, saying how many bytes stay for the next call. */
  const kept = (failure: HubError) =>
    new HubError({
      reason: failure.reason,
      repoId: context.repoId,
      revision: context.revision,
      file: metadata.file,
      ...(failure.status === undefined ? {} : { status: failure.status }),
      message: `${failure.message} ${position} of ${metadata.size} bytes of ${metadata.file} are kept in the cache; the next call resumes from there.`,
      cause: failure,
    })
  const integrityError = (message: string) =>
    new HubError({ reason: 'integrity', repoId: context.repoId, revision: context.revision, file: metadata.file, message })
  try {
    if (position > metadata.size) await restart()
    else if (hash !== undefined) await hashPrefix(hash, incomplete, position)
    onBytes(position)
    let startedAt = -1
    for (let attempt = 0; position < metadata.size; attempt++) {
      if (attempt > 0 && position === startedAt) await backOff(attempt, context.signal)
      startedAt = position
      let failure: HubError | undefined
      let request: Awaited<ReturnType<typeof hubRequest>> | undefined
      try {
        request = await hubRequest(context, metadata.url, { method: 'GET', range: position }, `download ${metadata.file}`, metadata.file)
      } catch (error) {
        if (!HubError.isInstance(error)) throw error
        if (attempt >= retries) throw kept(error)
        continue
      }
      const { response, timeout } = request
      try {
        if (response.status !== 200 && response.status !== 206) {
          await response.body?.cancel()
          failure = responseError(context, response, metadata.file)
          // 416: the partial file does not fit the file on the server; start over.
          if (response.status === 416) await restart()
          else if (failure.reason !== 'network') throw failure
        } else {
          // A server that ignores the range (200) or answers another one: start the file over.
          if ((response.status === 206 ? rangeStart(response) : 0) !== position) await restart()
          try {
            for await (const piece of response.body ?? []) {
              timeout.touch()
              if (position + piece.byteLength > metadata.size)
                throw integrityError(`The Hub sent more than the ${metadata.size} bytes it announced for ${metadata.file}.`)
              await handle.write(piece, 0, piece.byteLength, position)
              hash?.update(piece)
              position += piece.byteLength
              onBytes(position)
            }
          } catch (error) {
            if (HubError.isInstance(error)) throw error
            const cause = requestFailure(context, error, timeout.timedOut(), `download ${metadata.file}`, metadata.file)
            if (!HubError.isInstance(cause)) throw cause
            failure = cause
          }
          if (failure === undefined && position < metadata.size) {
            failure = new HubError({
              reason: 'network',
              repoId: context.repoId,
              revision: context.revision,
              file: metadata.file,
              message: `The transfer of ${metadata.file} ended early.`,
            })
          }
        }
      } finally {
        timeout.dispose()
      }
      if (failure !== undefined && attempt >= retries) throw kept(failure)
    }
  } catch (error) {
    await handle.close()
    if (HubError.isInstance(error) && error.reason === 'integrity') await rm(incomplete, { force: true })
    throw error
  }
  await handle.close()
  await checkAndStore(context, metadata, incomplete, blob, hash)
  return true
}

async function checkAndStore(context: HubRequestContext, metadata: FileMetadata, incomplete: string, blob: string, hash: Hash | undefined): Promise<void> {
  const size = await sizeOf(incomplete)
  const digest = hash?.digest('hex')
  const problem =
    size !== metadata.size
      ? `is ${size} bytes, the Hub announced ${metadata.size}`
      : digest !== undefined && digest !== metadata.etag
        ? `has SHA-256 ${digest}, the Hub announced ${metadata.etag}`
        : undefined
  if (problem !== undefined) {
    await rm(incomplete, { force: true })
    throw new HubError({
      reason: 'integrity',
      repoId: context.repoId,
      revision: context.revision,
      file: metadata.file,
      message: `The download of ${metadata.file} ${problem}; the partial file was deleted, try again.`,
    })
  }
  try {
    await rename(incomplete, blob)
  } catch (error) {
    // Another download of the same blob finished first.
    if ((await sizeOf(blob)) !== metadata.size) throw error
  }
}
