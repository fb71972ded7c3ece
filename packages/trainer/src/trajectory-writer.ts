import { createReadStream } from 'node:fs'
import { appendFile, mkdir, truncate } from 'node:fs/promises'
import { dirname } from 'node:path'
import { FileSystemError } from '@ludic/core'

export { boundedTrajectoryLine, rlTrajectoryRecords, sampledEpisodes, trainedSamplesOf, type RlTrajectoryInput } from './trajectory-records.js'

/**
 * `trajectories.jsonl` on disk: `write(step, lines)` appends a step's lines; the first write of the process drops the
 * lines of that step or later (and a line cut short by a crash), as `metrics.jsonl` does, so a step is never written
 * twice; `keepThrough(step)` drops the lines of later steps (a resumed run continues from its checkpoint's step).
 */
export interface TrajectoryFile {
  readonly path: string
  write(step: number, lines: readonly string[]): Promise<void>
  keepThrough(step: number): Promise<void>
}

export function createTrajectoryFile(path: string): TrajectoryFile {
  let checked = false
  const writing = async (write: () => Promise<unknown>) => {
    try {
      await write()
    } catch (error) {
      throw FileSystemError.wrap(error, path, 'write')
    }
  }
  const keepBefore = async (step: number) => {
    const offset = await firstOffsetFrom(path, step)
    if (offset !== undefined) await writing(() => truncate(path, offset))
  }
  return {
    path,
    async write(step, lines) {
      if (!checked) await keepBefore(step)
      checked = true
      if (lines.length === 0) return
      await writing(async () => {
        await mkdir(dirname(path), { recursive: true })
        await appendFile(path, lines.map((line) => `${line}\n`).join(''))
      })
    },
    keepThrough: (step) => keepBefore(step + 1),
  }
}

/**
 * The byte offset of the first line of `path` whose step is `step` or later, or that is not a whole JSON line (cut by
 * a crash, no newline at its end); undefined when the file has none (or does not exist). The file is streamed, one
 * line in memory at a time; a line longer than 16 MiB counts as broken without being held whole.
 */
async function firstOffsetFrom(path: string, step: number): Promise<number | undefined> {
  const longest = 16 * 1024 * 1024
  let offset = 0
  let pieces: Buffer[] = []
  let pending = 0
  let tooLong = false
  const stream = createReadStream(path)
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let start = 0
      for (let newline = chunk.indexOf(10, start); newline !== -1; newline = chunk.indexOf(10, start)) {
        const tail = chunk.subarray(start, newline)
        const length = pending + tail.length
        const stale = tooLong || length > longest || lineStepFrom(Buffer.concat([...pieces, tail]).toString('utf8'), step)
        if (stale) return offset
        offset += length + 1
        pieces = []
        pending = 0
        start = newline + 1
      }
      const rest = chunk.subarray(start)
      pending += rest.length
      if (pending > longest) {
        tooLong = true
        pieces = []
      } else if (rest.length > 0) pieces.push(Buffer.from(rest))
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw FileSystemError.wrap(error, path, 'read')
  }
  // A last line without its newline was cut short.
  return pending > 0 ? offset : undefined
}

/** Whether a line is of `step` or later, or not a record at all (cut by a crash). Blank lines are kept. */
function lineStepFrom(line: string, step: number): boolean {
  if (line.trim() === '') return false
  try {
    const value = (JSON.parse(line) as { step?: unknown }).step
    return typeof value !== 'number' || value >= step
  } catch {
    return true
  }
}
