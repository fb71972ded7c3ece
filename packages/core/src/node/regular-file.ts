import { constants } from 'node:fs'
import { type FileHandle, open } from 'node:fs/promises'
import { InvalidArgumentError } from '../errors.js'

/** What a file that is not a regular file is, for messages. */
function fileKind(stats: { isDirectory(): boolean; isFIFO(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean; isSocket(): boolean }) {
  if (stats.isDirectory()) return 'a directory'
  if (stats.isFIFO()) return 'a FIFO (named pipe)'
  if (stats.isCharacterDevice()) return 'a character device'
  if (stats.isBlockDevice()) return 'a block device'
  if (stats.isSocket()) return 'a socket'
  return 'not a regular file'
}

/** Options of `openRegularFile`. */
export interface OpenRegularFileOptions {
  /** The argument's name in errors. Default: `'path'`. */
  argument?: string
  /** Refuse a file larger than this many bytes (checked on the opened file, before anything is read). */
  maxBytes?: number
  /** Refuse a path whose last component is a symbolic link (`O_NOFOLLOW`), for a path already resolved. Default: false. */
  noFollow?: boolean
}

/** An opened regular file: its handle (the caller closes it), its size, and its identity (device and inode) when opened. */
export interface OpenedRegularFile {
  handle: FileHandle
  size: number
  /** Device and inode of the opened file: compare with a later `stat` of its path to know the path still names it. */
  identity: { dev: number; ino: number }
}

/**
 * Opens a file for reading that must be a regular file: opened without blocking (`O_NONBLOCK`, so a FIFO with no
 * writer cannot hold a thread of Node's pool — and with it every later file operation and the process's exit), then
 * checked on the opened descriptor (`fstat`: no race with the path changing), and its size bounded when `maxBytes`
 * is given. A FIFO, a device (`/dev/zero`), a directory or a socket is an `InvalidArgumentError` naming `argument`
 * and the path; Node's own errors (`ENOENT`, `EACCES`) pass through with their `code`. The caller closes the handle.
 */
export async function openRegularFile(path: string, options: OpenRegularFileOptions = {}): Promise<OpenedRegularFile> {
  const argument = options.argument ?? 'path'
  // O_NONBLOCK only changes how FIFOs and devices open; on Windows it does not exist (and FIFOs cannot be opened by path).
  const noFollow = options.noFollow === true ? (constants.O_NOFOLLOW ?? 0) : 0
  const handle = await open(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | noFollow)
  try {
    const stats = await handle.stat()
    if (!stats.isFile()) throw new InvalidArgumentError({ argument, value: path, message: `is ${fileKind(stats)}, not a regular file` })
    if (options.maxBytes !== undefined && stats.size > options.maxBytes) {
      throw new InvalidArgumentError({ argument, value: path, message: `is ${stats.size} bytes; the limit is ${options.maxBytes}` })
    }
    return { handle, size: stats.size, identity: { dev: stats.dev, ino: stats.ino } }
  } catch (error) {
    await handle.close()
    throw error
  }
}

/**
 * Reads a whole regular file of at most `maxBytes` (see `openRegularFile`): never blocks on a FIFO, never reads a
 * device without end, never allocates more than the bound (a file that grows while it is read is cut at the bound and
 * refused). Returns the bytes, or the text with `encoding: 'utf8'`.
 */
export async function readRegularFile(path: string, options: OpenRegularFileOptions & { maxBytes: number; encoding: 'utf8' }): Promise<string>
export async function readRegularFile(path: string, options: OpenRegularFileOptions & { maxBytes: number; encoding?: undefined }): Promise<Uint8Array>
export async function readRegularFile(
  path: string,
  options: OpenRegularFileOptions & { maxBytes: number; encoding?: 'utf8' | undefined },
): Promise<string | Uint8Array> {
  const opened = await openRegularFile(path, options)
  try {
    const bytes = await readOpenedFile(opened, path, options)
    return options.encoding === 'utf8' ? new TextDecoder().decode(bytes) : bytes
  } finally {
    await opened.handle.close()
  }
}

/**
 * Reads an opened file whole within `maxBytes` (see `readRegularFile`), without closing it: for a caller that checks
 * the opened file (its `identity`) before trusting what it reads.
 */
export async function readOpenedFile(
  opened: Pick<OpenedRegularFile, 'handle' | 'size'>,
  path: string,
  options: Pick<OpenRegularFileOptions, 'argument'> & { maxBytes: number },
): Promise<Uint8Array> {
  // One byte more than the size: a file that grew since fstat is noticed rather than silently cut.
  const buffer = new Uint8Array(Math.min(opened.size, options.maxBytes) + 1)
  let length = 0
  while (length < buffer.length) {
    const { bytesRead } = await opened.handle.read(buffer, length, buffer.length - length, length)
    if (bytesRead === 0) break
    length += bytesRead
  }
  if (length > options.maxBytes) {
    throw new InvalidArgumentError({
      argument: options.argument ?? 'path',
      value: path,
      message: `grew past the limit of ${options.maxBytes} bytes while it was read`,
    })
  }
  return buffer.subarray(0, length)
}
