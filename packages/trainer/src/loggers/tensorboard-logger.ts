import { open, mkdir, type FileHandle } from 'node:fs/promises'
import { hostname as systemHostname } from 'node:os'
import { isAbsolute, join, resolve } from 'node:path'
import { FileSystemError, LudicError } from '@ludic/core'
import type { RunLoggerV1 } from './run-logger.js'
import { encodeEvents, type TensorBoardEvent } from './tensorboard-events.js'
import { preformatted } from './episode-transcript.js'

export interface TensorBoardLoggerOptions {
  /** Where the event files go: relative to the run directory, or absolute. Default `tensorboard`. */
  directory?: string
  /** The wall clock in seconds since the epoch (event times and the file name). Default: `Date.now() / 1000`. */
  clock?: () => number
  /** The host name in the file name. Default: the machine's. */
  hostname?: string
}

/** The file version TensorBoard's purging logic needs (2: restarts are marked with `SessionLog.START`). */
const fileVersion = 'brain.Event:2'

/**
 * Writes TensorBoard event files (`tensorboard --logdir <run directory>/tensorboard`): each step's metrics as scalars
 * (`simple_value`, a 32-bit float as TensorBoard keeps it: 0.1 reads back as 0.10000000149), the run's configuration
 * as a text summary (tag `config`) and the trainer's texts (tag `episodes/sample`: an episode's transcript). A value
 * that is not finite is left out of the step, as `metrics.jsonl` writes it `null`.
 *
 * Each process writes its own file (`events.out.tfevents.<seconds>.<host>`), starting with a `SessionLog.START` at the
 * first step it writes: TensorBoard then drops what older files hold of that step and later ones, so the steps a
 * resumed run takes again replace those taken before its checkpoint (as in `metrics.jsonl`).
 */
export function createTensorBoardLogger(options: TensorBoardLoggerOptions = {}): RunLoggerV1 {
  const clock = options.clock ?? (() => Date.now() / 1000)
  const host = (options.hostname ?? systemHostname()).replace(/[^A-Za-z0-9._-]/g, '_') || 'localhost'
  let file: { handle: FileHandle; path: string } | undefined
  const write = async (events: TensorBoardEvent[]) => {
    if (file === undefined) throw new LudicError('the TensorBoard logger was used before start() or after close()')
    try {
      await file.handle.write(encodeEvents(events))
    } catch (error) {
      throw FileSystemError.wrap(error, file.path, 'write')
    }
  }
  return {
    specificationVersion: 'v1',
    name: 'tensorboard',
    async start(run) {
      const given = options.directory ?? 'tensorboard'
      if (!isAbsolute(given) && run.directory === undefined)
        throw new LudicError(`the TensorBoard logger's directory '${given}' is relative to the run directory, and the run has none`)
      const directory = run.directory === undefined ? given : resolve(run.directory, given)
      const now = clock()
      const base = join(directory, `events.out.tfevents.${String(Math.floor(now)).padStart(10, '0')}.${host}`)
      try {
        await mkdir(directory, { recursive: true })
      } catch (error) {
        throw FileSystemError.wrap(error, directory, 'create')
      }
      // A second writer in the same second gets its own file (`.1`, `.2`…), read after the first (names sort by time).
      for (let attempt = 0; file === undefined; attempt++) {
        const path = attempt === 0 ? base : `${base}.${attempt}`
        try {
          file = { handle: await open(path, 'wx'), path }
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 1000) throw FileSystemError.wrap(error, path, 'create')
        }
      }
      const from = run.resumedAtStep === undefined ? 0 : run.resumedAtStep + 1
      await write([
        { wallTime: now, step: 0, fileVersion },
        { wallTime: now, step: from, sessionStart: true },
        { wallTime: now, step: from, text: { tag: 'config', value: preformatted(JSON.stringify(run.config, null, 2)) } },
      ])
    },
    async log(metrics) {
      const scalars = Object.entries(metrics)
        .filter(([name, value]) => name !== 'step' && typeof value === 'number' && Number.isFinite(value))
        .map(([tag, value]) => ({ tag, value }))
      if (scalars.length > 0) await write([{ wallTime: clock(), step: metrics.step, scalars }])
    },
    async text(tag, step, text) {
      await write([{ wallTime: clock(), step, text: { tag, value: text } }])
    },
    async close() {
      const closing = file
      file = undefined
      await closing?.handle.close()
    },
  }
}
