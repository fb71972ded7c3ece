import { mkdir, readFile, appendFile, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'

/** One step's metrics: plain numbers by name (JSON-serialisable), `step` first. */
export type StepMetrics = { step: number } & Record<string, number>

/**
 * Appends metrics as JSON lines (`metrics.jsonl`), one object per step. `truncateAfter(step)` drops the
 * lines of later steps: a run resumed from the checkpoint of `step` rewrites them, so none is duplicated.
 */
export interface MetricsLog {
  readonly path: string
  append(metrics: StepMetrics): Promise<void>
  truncateAfter(step: number): Promise<void>
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
  return {
    path,
    async append(metrics) {
      await mkdir(dirname(path), { recursive: true })
      await appendFile(path, `${JSON.stringify(metrics, (_, value: unknown) => (typeof value === 'number' && !Number.isFinite(value) ? null : value))}\n`)
    },
    async truncateAfter(step) {
      const kept = (await read()).filter((record) => record.step <= step)
      await mkdir(dirname(path), { recursive: true })
      await writeFile(path, kept.map((record) => `${JSON.stringify(record)}\n`).join(''))
    },
    read,
  }
}
