import type { FileHandle } from 'node:fs/promises'
import { openFileInside } from './file-inside.js'
import type { SkippedLine } from './api-types.js'

export type { SkippedLine }

/** A complete line that parsed as JSON: where it is in the file, and its value. */
export interface JsonLine {
  /** 1-based. */
  line: number
  /** Byte offset of the line's start, and its length in bytes (without the newline). */
  offset: number
  length: number
  value: unknown
}

/** What one `poll` found since the one before. */
export interface JsonlPoll {
  /**
   * The file was replaced, cut short or rewritten (a resumed run truncates its logs): every line reported before is
   * void, and `lines` starts again from line 1.
   */
  reset: boolean
  lines: JsonLine[]
  skipped: SkippedLine[]
  /** The last line when it has no newline yet (being written, or cut short by a crash): not read until it has one. */
  pending: SkippedLine | undefined
  /** Why the file is not read at all (a symbolic link out of the run directory, not a regular file). */
  refused: string | undefined
}

export interface JsonlTailOptions {
  /** Longer lines are skipped without being gathered into one string. Default 1 MiB. */
  maxLineBytes?: number
  /** Bytes read at a time. Default 64 KiB. */
  chunkBytes?: number
}

/** Bytes compared at the file's start and just before the read offset to tell a rewritten file from a grown one. */
const fingerprintBytes = 64

/**
 * Reads a growing JSON Lines file inside a run directory incrementally: each `poll` reads only what was appended
 * since the last (the byte offset after the last complete line is remembered), in chunks, so a line of any length
 * costs at most `maxLineBytes` of memory — a longer one is counted and skipped, never built as one string. A file
 * that shrank, was replaced (another inode) or whose bytes changed at its start or just before the remembered offset
 * (rewritten in place, as a resumed run's logs are) is read again from its start, and the poll says `reset`.
 * Polls run one at a time.
 */
export class JsonlTail {
  readonly root: string
  readonly name: string
  private readonly maxLineBytes: number
  private readonly chunkBytes: number
  /** Bytes consumed: the start of the first line not yet read whole (or the end, while skipping a long line). */
  private offset = 0
  /** Lines consumed. */
  private line = 0
  private identity: { inode: number; device: number } | undefined
  private head: Buffer = Buffer.alloc(0)
  private tail: Buffer = Buffer.alloc(0)
  /** A line over the limit being skipped across polls: its line number and the bytes seen. */
  private skipping: { line: number; bytes: number } | undefined
  private queue: Promise<unknown> = Promise.resolve()

  constructor(root: string, name: string, options: JsonlTailOptions = {}) {
    this.root = root
    this.name = name
    this.maxLineBytes = options.maxLineBytes ?? 1 << 20
    this.chunkBytes = options.chunkBytes ?? 1 << 16
  }

  /** Reads what was appended since the last poll (everything, the first time or after a reset). */
  poll(): Promise<JsonlPoll> {
    const next = this.queue.then(() => this.read())
    this.queue = next.catch(() => undefined)
    return next
  }

  /**
   * The JSON value of the `length` bytes at `offset` (a line an earlier poll found), or `undefined` when the file is
   * gone or those bytes are no longer JSON (it was rewritten since).
   */
  async readLine(offset: number, length: number): Promise<unknown> {
    const opened = await openFileInside(this.root, this.name)
    if (opened.status !== 'open') return undefined
    try {
      if (offset + length > opened.size) return undefined
      const parsed = parseLine(await readBytes(opened.handle, offset, length))
      return typeof parsed === 'object' ? parsed.value : undefined
    } finally {
      await opened.handle.close()
    }
  }

  private forget(): void {
    this.offset = 0
    this.line = 0
    this.identity = undefined
    this.head = Buffer.alloc(0)
    this.tail = Buffer.alloc(0)
    this.skipping = undefined
  }

  private async read(): Promise<JsonlPoll> {
    const hadRead = this.identity !== undefined
    const opened = await openFileInside(this.root, this.name)
    if (opened.status !== 'open') {
      this.forget()
      return { reset: hadRead, lines: [], skipped: [], pending: undefined, refused: opened.status === 'refused' ? opened.reason : undefined }
    }
    const { handle, size } = opened
    try {
      let reset = false
      if (hadRead) {
        const replaced = this.identity!.inode !== opened.inode || this.identity!.device !== opened.device
        if (
          replaced ||
          size < this.offset ||
          !(await bytesEqual(handle, 0, this.head)) ||
          !(await bytesEqual(handle, this.offset - this.tail.length, this.tail))
        ) {
          this.forget()
          reset = true
        }
      }
      this.identity = { inode: opened.inode, device: opened.device }
      const result = await this.readFrom(handle, size)
      this.head = await readBytes(handle, 0, Math.min(fingerprintBytes, this.offset))
      const tailLength = Math.min(fingerprintBytes, this.offset)
      this.tail = await readBytes(handle, this.offset - tailLength, tailLength)
      return { reset, ...result, refused: undefined }
    } finally {
      await handle.close()
    }
  }

  /** Reads from `offset` to `end`, line by line. */
  private async readFrom(handle: FileHandle, end: number): Promise<Omit<JsonlPoll, 'reset' | 'refused'>> {
    const lines: JsonLine[] = []
    const skipped: SkippedLine[] = []
    const chunk = Buffer.alloc(this.chunkBytes)
    let position = this.offset
    let lineStart = this.offset
    let pieces: Buffer[] = []
    let pieceBytes = 0
    const tooLong = (line: number, bytes: number) => skipped.push({ line, reason: `longer than ${this.maxLineBytes} bytes (${bytes} bytes): not read` })
    while (position < end) {
      const { bytesRead } = await handle.read(chunk, 0, Math.min(this.chunkBytes, end - position), position)
      if (bytesRead === 0) break
      const data = chunk.subarray(0, bytesRead)
      let from = 0
      for (let newline = data.indexOf(10, from); newline !== -1; newline = data.indexOf(10, from)) {
        const segment = data.subarray(from, newline)
        this.line++
        if (this.skipping !== undefined) {
          tooLong(this.skipping.line, this.skipping.bytes + segment.length)
          this.skipping = undefined
        } else if (pieceBytes + segment.length > this.maxLineBytes) {
          tooLong(this.line, pieceBytes + segment.length)
        } else {
          const bytes = pieces.length === 0 ? segment : Buffer.concat([...pieces, segment])
          const parsed = parseLine(bytes)
          if (parsed === 'invalid') skipped.push({ line: this.line, reason: 'invalid JSON' })
          else if (parsed !== 'blank') lines.push({ line: this.line, offset: lineStart, length: bytes.length, value: parsed.value })
        }
        pieces = []
        pieceBytes = 0
        lineStart = position + newline + 1
        from = newline + 1
      }
      const rest = data.subarray(from)
      if (this.skipping !== undefined) this.skipping.bytes += rest.length
      else if (pieceBytes + rest.length > this.maxLineBytes) {
        this.skipping = { line: this.line + 1, bytes: pieceBytes + rest.length }
        pieces = []
        pieceBytes = 0
      } else if (rest.length > 0) {
        pieces.push(Buffer.from(rest)) // a copy: the chunk is reused
        pieceBytes += rest.length
      }
      position += bytesRead
    }
    // A long line is consumed as it is skipped; a short incomplete one is read again once it has its newline.
    this.offset = this.skipping === undefined ? lineStart : position
    const pending =
      this.skipping !== undefined
        ? { line: this.skipping.line, reason: `longer than ${this.maxLineBytes} bytes so far, no newline yet: not read` }
        : pieceBytes > 0
          ? { line: this.line + 1, reason: `incomplete last line (${pieceBytes} bytes without a newline: being written, or cut short)` }
          : undefined
    return { lines, skipped, pending }
  }
}

/** A line's JSON value, `blank` for an empty line, `invalid` for anything that is not JSON. */
function parseLine(bytes: Buffer): { value: unknown } | 'blank' | 'invalid' {
  const text = bytes.toString('utf8')
  if (text.trim() === '') return 'blank'
  try {
    return { value: JSON.parse(text) as unknown }
  } catch {
    return 'invalid'
  }
}

async function readBytes(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length)
  if (length === 0) return buffer
  const { bytesRead } = await handle.read(buffer, 0, length, position)
  return buffer.subarray(0, bytesRead)
}

async function bytesEqual(handle: FileHandle, position: number, expected: Buffer): Promise<boolean> {
  if (expected.length === 0) return true
  return (await readBytes(handle, position, expected.length)).equals(expected)
}
