import { randomBytes } from 'node:crypto'
import { open, rename, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

/**
 * Writes `value` as JSON (2-space indented, newline-terminated) so that readers see the old file or the
 * whole new one: a temporary file in the same directory, fsync, rename over `path`. On failure the
 * temporary file is removed and `path` is left as it was. (The same protocol as `writeSafetensorsFile`.)
 */
export async function writeJsonFileAtomically(path: string, value: unknown): Promise<void> {
  const bytes = new TextEncoder().encode(`${JSON.stringify(value, null, 2)}\n`)
  const temporaryPath = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`)
  const handle = await open(temporaryPath, 'wx')
  try {
    try {
      let written = 0
      while (written < bytes.length) {
        const { bytesWritten } = await handle.write(bytes, written, bytes.length - written, written)
        if (bytesWritten === 0) throw new Error(`Writing ${path} stopped at byte ${written}`)
        written += bytesWritten
      }
      await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(temporaryPath, path)
  } catch (error) {
    await rm(temporaryPath, { force: true })
    throw error
  }
}

/** Flushes a directory's entries (renames into it) to disk; a no-op where directories cannot be opened. */
export async function syncDirectory(directory: string): Promise<void> {
  let handle: Awaited<ReturnType<typeof open>> | undefined
  try {
    handle = await open(directory, 'r')
    await handle.sync()
  } catch {
    // Not supported here (Windows): the renames are still atomic.
  } finally {
    await handle?.close().catch(() => undefined)
  }
}
