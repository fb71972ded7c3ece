import { randomBytes } from 'node:crypto'
import { open, rename, rm, type FileHandle } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { FileSystemError } from '@ludic/core'

/**
 * Writes a file so that readers see either the old file or the whole new one, never a partial write:
 * `write` fills a temporary file in the same directory, which is flushed to disk (fsync), then renamed
 * over `path`; the directory is then flushed too where the platform allows. On any failure the temporary
 * file is removed and `path` is left as it was; a failure of the file system (a full disk: Node's error for a
 * write names no file) is a `FileSystemError` naming `path`.
 */
export async function writeFileAtomically(path: string, write: (handle: FileHandle) => Promise<void>): Promise<void> {
  const directory = dirname(path)
  const temporaryPath = join(directory, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`)
  let handle: FileHandle
  try {
    handle = await open(temporaryPath, 'wx')
  } catch (error) {
    throw FileSystemError.wrap(error, path, 'write')
  }
  try {
    try {
      await write(handle)
      await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(temporaryPath, path)
  } catch (error) {
    await rm(temporaryPath, { force: true })
    throw FileSystemError.wrap(error, path, 'write')
  }
  await syncDirectory(directory)
}

/** Writes all of `bytes` at `position` (a single write call may write less). */
export async function writeFully(handle: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  let done = 0
  while (done < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, done, Math.min(bytes.length - done, 1 << 28), position + done)
    if (bytesWritten === 0)
      throw Object.assign(new Error(`Writing stopped at byte ${position + done}: the file system accepted no more bytes`), { code: 'ENOSPC' })
    done += bytesWritten
  }
}

/** Writes `value` as JSON (2-space indent, trailing newline) with `writeFileAtomically`. */
export async function writeJsonFileAtomically(path: string, value: unknown): Promise<void> {
  const bytes = new TextEncoder().encode(`${JSON.stringify(value, null, 2)}\n`)
  await writeFileAtomically(path, (handle) => writeFully(handle, bytes, 0))
}

/** Flushes a directory entry change (the rename) to disk; skipped where directories cannot be opened (Windows). */
export async function syncDirectory(directory: string): Promise<void> {
  let handle: FileHandle | undefined
  try {
    handle = await open(directory, 'r')
    await handle.sync()
  } catch {
    // Not supported on this platform or file system: the rename itself is still atomic.
  } finally {
    await handle?.close().catch(() => undefined)
  }
}
