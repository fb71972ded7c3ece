import { createHash } from 'node:crypto'
import { constants, createReadStream } from 'node:fs'
import { type FileHandle, mkdir, open, rename, rm, stat } from 'node:fs/promises'
import { dirname } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { FileSystemError, ParseError } from '@ludic/core'
import { blobLockPath, blobPath } from './cache-layout.js'
import { acquireFileLock, type HeldLock } from './file-lock.js'
import { HubError } from './hub-error.js'
import { type Deadline, deadlineError, type HubRequestContext, hubRequest, isHubOrigin, requestFailure, responseError, startDeadline } from './hub-http.js'

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
 * `HEAD resolve/<commit>/<file>` as Python's `get_hf_file_metadata` does it: redirects on the Hub's own origin are
 * followed (a renamed repository), a redirect elsewhere (the CDN, another port or scheme) is not, its headers
 * carry the metadata.
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
    if (isRedirect && isHubOrigin(context.endpoint, target)) {
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

/** The SHA-256 of what `path` holds on disk. */
async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash('sha256')
  try {
    for await (const piece of createReadStream(path)) hash.update(piece as Buffer)
  } catch (error) {
    throw FileSystemError.wrap(error, path, 'read')
  }
  return hash.digest('hex')
}

/** Waits before retry `attempt` (1, 2, …) of a transfer that made no progress: 0.5 s, 1 s, 2 s, … at most 8 s; an abort or the deadline ends the wait. */
function backOff(attempt: number, signal: AbortSignal): Promise<void> {
  return delay(Math.min(500 * 2 ** (attempt - 1), 8000), undefined, { signal })
}

/** Where the `Content-Range` of a 206 answer starts, `undefined` when it has none. */
function rangeStart(response: Response): number | undefined {
  const match = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(response.headers.get('content-range') ?? '')
  return match === null ? undefined : Number(match[1])
}

/** How one blob is fetched: retries within the call, the overall deadline, and whom to tell about bytes and waits. */
export interface BlobDownloadOptions {
  retries: number
  /** The longest the file may take, waiting for another process that downloads it included. */
  fileTimeoutMs: number
  onBytes: (bytesDone: number) => void
  /** Called when another process (Ludic or Python's `huggingface_hub`) holds the blob's lock and this call waits for it. */
  onWait?: (lockPath: string) => void
}

/**
 * Downloads one file into `blobs/<etag>`, through `blobs/<etag>.incomplete`, holding the blob's lock
 * (`<cache>/.locks/models--owner--name/<etag>.lock`, the one Python's `huggingface_hub` takes; see `file-lock.ts`)
 * so that no other process, Ludic's or Python's, writes the same partial file at the same time; a blob another
 * process finished while this one waited is used as it is. Bytes already in the partial file (from an
 * interrupted call, Ludic's or Python's) are kept and the rest asked for with `Range: bytes=<n>-`; a server that
 * ignores the range restarts the file. A transfer cut, stalled or answered 429/5xx is resumed the same way up to
 * `retries` times within the call (after a pause doubling from 0.5 s when the last attempt brought no bytes);
 * past that, or past `fileTimeoutMs` for the whole file, the partial file stays for the next call. The file on
 * disk is then checked against the announced size and, for LFS files, the SHA-256 the etag is (read back from
 * disk, not from the stream: what is moved into place is what was checked); a mismatch deletes the partial
 * file and is an `integrity` `HubError`. A file-system failure (a full disk) is a `FileSystemError` naming the
 * file. Returns `false` when the blob was already there (nothing downloaded).
 */
export async function downloadBlob(context: HubRequestContext, storage: string, metadata: FileMetadata, options: BlobDownloadOptions): Promise<boolean> {
  const blob = blobPath(storage, metadata.etag)
  if ((await sizeOf(blob)) >= 0) return false
  const deadline = startDeadline(options.fileTimeoutMs)
  const fileContext: HubRequestContext & { deadline: Deadline } = { ...context, deadline }
  const stop = context.signal === undefined ? deadline.signal : AbortSignal.any([context.signal, deadline.signal])
  try {
    const lockPath = blobLockPath(storage, metadata.etag)
    let lock: HeldLock
    try {
      lock = await acquireFileLock(lockPath, { signal: stop, onWait: () => options.onWait?.(lockPath) })
    } catch (error) {
      context.signal?.throwIfAborted()
      if (deadline.expired()) throw deadlineError(fileContext, `Waiting for another process downloading ${metadata.file} (it holds ${lockPath})`, metadata.file)
      throw FileSystemError.wrap(error, lockPath, 'lock')
    }
    try {
      // Another process may have finished the blob while this one waited for the lock.
      if ((await sizeOf(blob)) >= 0) return false
      await transfer(fileContext, blob, metadata, options, stop)
      return true
    } finally {
      await lock.release()
    }
  } finally {
    deadline.dispose()
  }
}

/** The transfer itself, under the blob's lock: into `<blob>.incomplete`, then checked on disk and renamed to `blob`. */
async function transfer(
  context: HubRequestContext & { deadline: Deadline },
  blob: string,
  metadata: FileMetadata,
  options: BlobDownloadOptions,
  stop: AbortSignal,
): Promise<void> {
  const incomplete = `${blob}.incomplete`
  const fail = (error: unknown, operation: string) => FileSystemError.wrap(error, incomplete, operation)
  await mkdir(dirname(blob), { recursive: true }).catch((error: unknown) => {
    throw FileSystemError.wrap(error, dirname(blob), 'create the folder')
  })
  const handle: FileHandle = await open(incomplete, constants.O_WRONLY | constants.O_CREAT).catch((error: unknown) => {
    throw fail(error, 'open')
  })
  let position = Math.max(0, await sizeOf(incomplete))
  const restart = async () => {
    await handle.truncate(0).catch((error: unknown) => {
      throw fail(error, 'truncate')
    })
    position = 0
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
    options.onBytes(position)
    let startedAt = -1
    for (let attempt = 0; position < metadata.size; attempt++) {
      if (attempt > 0 && position === startedAt) {
        try {
          await backOff(attempt, stop)
        } catch (error) {
          context.signal?.throwIfAborted()
          if (context.deadline.expired()) throw kept(deadlineError(context, `The download of ${metadata.file}`, metadata.file))
          throw error
        }
      }
      startedAt = position
      let failure: HubError | undefined
      let request: Awaited<ReturnType<typeof hubRequest>> | undefined
      try {
        request = await hubRequest(context, metadata.url, { method: 'GET', range: position }, `download ${metadata.file}`, metadata.file)
      } catch (error) {
        if (!HubError.isInstance(error)) throw error
        if (attempt >= options.retries || context.deadline.expired()) throw kept(error)
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
              await writeAll(handle, piece, position).catch((error: unknown) => {
                throw fail(error, 'write')
              })
              position += piece.byteLength
              options.onBytes(position)
            }
          } catch (error) {
            if (HubError.isInstance(error) || FileSystemError.isInstance(error)) throw error
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
      if (failure !== undefined && (attempt >= options.retries || context.deadline.expired())) throw kept(failure)
    }
    await handle.close().catch((error: unknown) => {
      throw fail(error, 'close')
    })
  } catch (error) {
    await handle.close().catch(() => undefined)
    if (HubError.isInstance(error) && error.reason === 'integrity') await rm(incomplete, { force: true })
    throw error
  }
  await checkAndStore(context, metadata, incomplete, blob)
}

/** Writes all of `bytes` at `position` (one write call may write less). */
async function writeAll(handle: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  let done = 0
  while (done < bytes.byteLength) {
    const { bytesWritten } = await handle.write(bytes, done, bytes.byteLength - done, position + done)
    if (bytesWritten === 0) throw Object.assign(new Error('the file system accepted no more bytes'), { code: 'ENOSPC' })
    done += bytesWritten
  }
}

/** Checks the partial file on disk (size, and SHA-256 for an LFS file) and moves it into place; deletes it when it is wrong. */
async function checkAndStore(context: HubRequestContext, metadata: FileMetadata, incomplete: string, blob: string): Promise<void> {
  const size = await sizeOf(incomplete)
  const digest = size === metadata.size && metadata.sha256 ? await sha256OfFile(incomplete) : undefined
  const problem =
    size !== metadata.size
      ? `is ${size} bytes on disk, the Hub announced ${metadata.size}`
      : digest !== undefined && digest !== metadata.etag
        ? `has SHA-256 ${digest} on disk, the Hub announced ${metadata.etag}`
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
  await rename(incomplete, blob).catch((error: unknown) => {
    throw FileSystemError.wrap(error, blob, 'move the finished download into place at')
  })
}
