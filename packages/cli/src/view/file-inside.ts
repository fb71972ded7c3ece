import { constants } from 'node:fs'
import { type FileHandle, open, realpath } from 'node:fs/promises'
import { join, relative, isAbsolute, sep } from 'node:path'

/** A file opened inside a run directory, or why it was not. */
export type OpenedFile =
  | { status: 'open'; handle: FileHandle; size: number; inode: number; device: number; modifiedMs: number }
  | { status: 'missing' }
  | { status: 'refused'; reason: string }

/** Whether `path` is `root` itself or inside it (both absolute, symbolic links already resolved). */
export function isInside(root: string, path: string): boolean {
  const rest = relative(root, path)
  return rest === '' || (!isAbsolute(rest) && rest !== '..' && !rest.startsWith(`..${sep}`))
}

/**
 * Opens `name` (a path relative to `root`, which must already be a real path) for reading, only when its real path
 * (every symbolic link resolved) lies inside `root` and it is a regular file: a link out of the directory, a FIFO, a
 * device or a directory is `refused` with the reason, and nothing of it is read. The real path is opened without
 * following a link and without blocking (a FIFO swapped in meanwhile cannot hang the server). The caller closes it.
 */
export async function openFileInside(root: string, name: string): Promise<OpenedFile> {
  let real: string
  try {
    real = await realpath(join(root, name))
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return { status: 'missing' }
    return { status: 'refused', reason: `${name} cannot be opened (${code ?? 'error'})` }
  }
  if (!isInside(root, real)) return { status: 'refused', reason: `${name} is a symbolic link out of the run directory: not read` }
  let handle: FileHandle
  try {
    handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return { status: 'missing' }
    return { status: 'refused', reason: `${name} cannot be opened (${code ?? 'error'})` }
  }
  const stats = await handle.stat()
  if (!stats.isFile()) {
    await handle.close()
    return { status: 'refused', reason: `${name} is not a regular file: not read` }
  }
  return { status: 'open', handle, size: stats.size, inode: stats.ino, device: stats.dev, modifiedMs: stats.mtimeMs }
}

/**
 * The text of a small file inside `root` (`openFileInside`'s checks), or `undefined` when it is missing, refused or
 * larger than `maxBytes` (never read past it).
 */
export async function readSmallFileInside(root: string, name: string, maxBytes: number): Promise<string | undefined> {
  const opened = await openFileInside(root, name)
  if (opened.status !== 'open') return undefined
  try {
    if (opened.size > maxBytes) return undefined
    const buffer = Buffer.alloc(opened.size)
    const { bytesRead } = await opened.handle.read(buffer, 0, opened.size, 0)
    return buffer.subarray(0, bytesRead).toString('utf8')
  } finally {
    await opened.handle.close()
  }
}

/** The JSON value of a small file inside `root` (`readSmallFileInside`), or `undefined` when it is missing, too large or not JSON. */
export async function readSmallJson(root: string, name: string, maxBytes: number): Promise<unknown> {
  const text = await readSmallFileInside(root, name, maxBytes)
  if (text === undefined) return undefined
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}
