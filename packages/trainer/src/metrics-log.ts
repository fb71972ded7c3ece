import { mkdir, readFile, appendFile, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { FileSystemError } from '@ludic/core'

/** One step's metrics: plain numbers by name (JSON-serialisable), `step` first. */
export type StepMetrics = { step: number } & Record<string, number>

/**
 * The figures every trainer's update logs beside its own, under TRL's names (`transformers.Trainer` logs them so):
 * the loss, the global gradient norm before clipping and the step's learning rate (its schedule applied).
 */
export type UpdateStepMetrics = StepMetrics & {
  /** The loss optimised, a mean over the batch (each trainer's metrics type says which loss). */
  loss: number
  /** Global gradient norm before clipping (Flow of Reasoning: the policy's, log Z apart). */
  grad_norm: number
  /** The step's learning rate, its schedule applied. */
  learning_rate: number
}

/**
 * Appends metrics as JSON lines (`metrics.jsonl`), one object per step. `truncateAfter(step)` drops the
 * lines of later steps: a run resumed from the checkpoint of `step` rewrites them, so none is duplicated.
 */
export interface MetricsLog {
  readonly path: string
  append(metrics: StepMetrics): Promise<void>
  /** Keeps the lines of steps up to `step` (those before a line cut short), and returns them. */
  truncateAfter(step: number): Promise<StepMetrics[]>
  /** Replaces the whole log with `records` (rebuilding it from a checkpoint's history). */
  rewrite(records: readonly StepMetrics[]): Promise<void>
  read(): Promise<StepMetrics[]>
}

export function createMetricsLog(path: string): MetricsLog {
  const read = async (): Promise<StepMetrics[]> => {
    let text: string
    try {
      text = await readFile(path, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw error
    }
    const records: StepMetrics[] = []
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue
      try {
        records.push(JSON.parse(line) as StepMetrics)
      } catch {
        break // a line cut by a crash mid-write ends the log
      }
    }
    return records
  }
  const line = (metrics: StepMetrics) =>
    `${JSON.stringify(metrics, (_, value: unknown) => (typeof value === 'number' && !Number.isFinite(value) ? null : value))}\n`
  /** A write whose failure (a full disk: Node's error names no file) names the log. */
  const writing = async (write: () => Promise<unknown>) => {
    try {
      await mkdir(dirname(path), { recursive: true })
      await write()
    } catch (error) {
      throw FileSystemError.wrap(error, path, 'write')
    }
  }
  const rewrite = (records: readonly StepMetrics[]) => writing(() => writeFile(path, records.map(line).join('')))
  return {
    path,
    append: (metrics) => writing(() => appendFile(path, line(metrics))),
    async truncateAfter(step) {
      const kept = (await read()).filter((record) => record.step <= step)
      await rewrite(kept)
      return kept
    },
    rewrite,
    read,
  }
}
