/**
 * The league's snapshots on disk (Node only: the Node entry registers it through `node-platform.ts`):
 * `<runDirectory>/league/snapshot-<step>.safetensors`, the snapshot's trainable parameters as float32.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { LudicError } from '@ludic/core'
import { readSafetensorsFile, writeSafetensorsFile } from '@ludic/tensors'

/** A snapshot's values by parameter name, with their shapes. */
export type SnapshotValues = ReadonlyMap<string, { shape: readonly number[]; data: Float32Array }>

export interface SnapshotFiles {
  readonly directory: string
  /** Writes the snapshot of `step` (atomically: a crash leaves the old file or the new one). */
  write(step: number, values: SnapshotValues): Promise<void>
  /** Reads the snapshot of `step`; a missing or unreadable file is a `LudicError` naming it. */
  read(step: number): Promise<Map<string, { shape: number[]; data: Float32Array }>>
  /** The steps of the snapshot files there now. */
  steps(): number[]
  /** Deletes the snapshot file of `step`, if any (synchronously: a checkpoint's state is taken synchronously). */
  remove(step: number): void
}

const filePattern = /^snapshot-(\d+)\.safetensors$/

export function createSnapshotFiles(runDirectory: string): SnapshotFiles {
  const directory = join(runDirectory, 'league')
  const path = (step: number) => join(directory, `snapshot-${step}.safetensors`)
  return {
    directory,
    async write(step, values) {
      mkdirSync(directory, { recursive: true })
      await writeSafetensorsFile(path(step), values, { metadata: { format: 'pt', 'ludic.league.step': String(step) } })
    },
    async read(step) {
      let contents: Awaited<ReturnType<typeof readSafetensorsFile>>
      try {
        contents = await readSafetensorsFile(path(step))
      } catch (error) {
        throw new LudicError(
          `the league's snapshot of step ${step} cannot be read from ${path(step)} (${error instanceof Error ? error.message : String(error)}): the checkpoint's pool needs it`,
          { cause: error },
        )
      }
      const values = new Map<string, { shape: number[]; data: Float32Array }>()
      for (const [name, tensor] of contents.tensors) {
        if (!(tensor.data instanceof Float32Array)) throw new LudicError(`${path(step)}: tensor '${name}' is ${tensor.dtype}, not float`)
        values.set(name, { shape: tensor.shape, data: tensor.data })
      }
      return values
    },
    steps() {
      let names: string[]
      try {
        names = readdirSync(directory)
      } catch {
        return []
      }
      return names.flatMap((name) => {
        const match = filePattern.exec(name)
        return match === null ? [] : [Number(match[1])]
      })
    },
    remove(step) {
      rmSync(path(step), { force: true })
    },
  }
}
