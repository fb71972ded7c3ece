import type { RunSummary, StepMetrics } from './api.js'

/** The records of both lists by step, the newer list's line winning (a resumed run rewrites the steps after its checkpoint). */
export function mergeRecords(older: readonly StepMetrics[], newer: readonly StepMetrics[]): StepMetrics[] {
  if (newer.length === 0) return [...older]
  const byStep = new Map<number, StepMetrics>()
  for (const record of older) byStep.set(record.step, record)
  for (const record of newer) if (typeof record.step === 'number' && Number.isFinite(record.step)) byStep.set(record.step, record)
  return [...byStep.values()].sort((a, b) => a.step - b.step)
}

/** `event: metrics`: the lines metrics.jsonl gained; `reset` when it was rewritten (a resumed run), `refetch` when too many to send. */
/**
 * A run's records once a load from the server answers: `answer` holds the file's lines after `after` (all of them
 * when undefined) as they were when the server read them; `current` may meanwhile have gained newer lines from the
 * live events, which the answer must not undo. Kept: `current` up to `after`, the answer, then what `current` has
 * beyond the answer's last step.
 */
export function combineLoaded(current: readonly StepMetrics[], answer: readonly StepMetrics[], after: number | undefined): StepMetrics[] {
  const base = after === undefined ? [] : current.filter((record) => record.step <= after)
  const answered = answer.reduce((last, record) => Math.max(last, record.step), after ?? Number.NEGATIVE_INFINITY)
  return mergeRecords(
    mergeRecords(base, answer),
    current.filter((record) => record.step > answered),
  )
}

export interface MetricsEvent {
  run: string
  records: StepMetrics[]
  reset: boolean
  refetch: boolean
}
/** `event: episodes`: trajectories.jsonl's episode count; `reset` when the file was rewritten. */
export interface EpisodesEvent {
  run: string
  total: number
  reset: boolean
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** An `event: metrics` message's data, or undefined when it is not `{ run, records: [...] }`. */
export function parseMetricsEvent(data: string): MetricsEvent | undefined {
  const value = parseJson(data)
  if (!isObject(value) || typeof value.run !== 'string' || !Array.isArray(value.records)) return undefined
  return {
    run: value.run,
    records: value.records.filter((record): record is StepMetrics => isObject(record) && typeof record.step === 'number'),
    reset: value.reset === true,
    refetch: value.refetch === true,
  }
}

/** An `event: episodes` message's data, or undefined when it is not `{ run, total }`. */
export function parseEpisodesEvent(data: string): EpisodesEvent | undefined {
  const value = parseJson(data)
  if (!isObject(value) || typeof value.run !== 'string' || typeof value.total !== 'number') return undefined
  return { run: value.run, total: value.total, reset: value.reset === true }
}

/** An `event: runs` message's data (`{ runs: [...] }`, the whole list), or undefined when it is not that. */
export function parseRunsEvent(data: string): RunSummary[] | undefined {
  const value = parseJson(data)
  if (!isObject(value) || !Array.isArray(value.runs)) return undefined
  return value.runs.filter((run): run is RunSummary => isObject(run) && typeof run.id === 'string' && typeof run.name === 'string')
}

function parseJson(data: string): unknown {
  try {
    return JSON.parse(data)
  } catch {
    return undefined
  }
}
