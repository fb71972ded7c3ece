import type { StepMetrics } from './api.js'

/** The records of both lists by step, the newer list's line winning (a resumed run rewrites the steps after its checkpoint). */
export function mergeRecords(older: readonly StepMetrics[], newer: readonly StepMetrics[]): StepMetrics[] {
  if (newer.length === 0) return [...older]
  const byStep = new Map<number, StepMetrics>()
  for (const record of older) byStep.set(record.step, record)
  for (const record of newer) if (typeof record.step === 'number' && Number.isFinite(record.step)) byStep.set(record.step, record)
  return [...byStep.values()].sort((a, b) => a.step - b.step)
}

export interface MetricsEvent {
  run: string
  records: StepMetrics[]
}
export interface EpisodesEvent {
  run: string
  total: number
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** An `event: metrics` message's data, or undefined when it is not `{ run, records: [...] }`. */
export function parseMetricsEvent(data: string): MetricsEvent | undefined {
  const value = parseJson(data)
  if (!isObject(value) || typeof value.run !== 'string' || !Array.isArray(value.records)) return undefined
  return { run: value.run, records: value.records.filter((record): record is StepMetrics => isObject(record) && typeof record.step === 'number') }
}

/** An `event: episodes` message's data, or undefined when it is not `{ run, total }`. */
export function parseEpisodesEvent(data: string): EpisodesEvent | undefined {
  const value = parseJson(data)
  if (!isObject(value) || typeof value.run !== 'string' || typeof value.total !== 'number') return undefined
  return { run: value.run, total: value.total }
}

function parseJson(data: string): unknown {
  try {
    return JSON.parse(data)
  } catch {
    return undefined
  }
}
