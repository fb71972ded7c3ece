import { parseInput } from '@ludic/core'
import type { TopLevelSpec } from 'vega-lite'
import { z } from 'zod'

/**
 * The one report every suite produces: plain JSON (a `JSON.parse` of its file gives it back, `parseBenchReport`
 * checks it), turned into a Markdown table by `benchReportMarkdown` and into files by `writeBenchReport`.
 *
 * Speed suites measure Ludic and its peers side by side in one run and report ratios (Ludic / peer); a peer that
 * could not run is listed in `peers` with `available: false` and the reason, and its ratio cells say
 * `peer unavailable: <reason>`: nothing is estimated in its place.
 */

const finiteNumber = z.number().refine(Number.isFinite, 'must be a finite number')

/** A table cell: text, a finite number, or null (nothing measured). */
export const benchCellSchema = z.union([z.string(), finiteNumber, z.null()])
export type BenchCell = z.infer<typeof benchCellSchema>

export const benchTableSchema = z
  .strictObject({
    title: z.string(),
    columns: z.array(z.string()).min(1, 'needs at least one column'),
    rows: z.array(z.array(benchCellSchema)),
    /** Sentences printed under the table (how it was measured, what could not run). */
    notes: z.array(z.string()).optional(),
  })
  .refine((table) => table.rows.every((row) => row.length === table.columns.length), {
    message: 'every row must have one cell per column',
    path: ['rows'],
  })
export type BenchTable = z.infer<typeof benchTableSchema>

export const benchMachineSchema = z.strictObject({
  /** `process.version`. */
  node: z.string(),
  platform: z.string(),
  arch: z.string(),
  /** Logical processors available to this process. */
  cpus: z.number().int().nonnegative(),
  cpuModel: z.string(),
  /** The CPU's vector-instruction flags that matter for the kernels (Linux only; empty elsewhere). */
  cpuFlags: z.string().optional(),
  memoryGiB: finiteNumber,
  /** One-minute load average at the start: other processes skew absolute figures (ratios less so). */
  loadAverage: finiteNumber.optional(),
  /** The TensorFlow.js backend the suite ran on (`wasm`, `tensorflow`, `cpu`…), several joined by `, `, or `none`. */
  backend: z.string(),
  /** `@tensorflow/tfjs-core`'s version. */
  tfjsVersion: z.string(),
})
export type BenchMachine = z.infer<typeof benchMachineSchema>

export const benchPeerSchema = z.strictObject({
  available: z.boolean(),
  version: z.string().optional(),
  /** Why the peer did not run (when `available` is false), or how it ran. */
  reason: z.string().optional(),
})
export type BenchPeer = z.infer<typeof benchPeerSchema>

export const benchReportSchema = z.strictObject({
  /** The suite's name (`benchSuiteNames`). */
  suite: z.string().min(1),
  title: z.string(),
  /** ISO 8601 time the suite started. */
  startedAt: z.string(),
  durationSeconds: finiteNumber.nonnegative(),
  machine: benchMachineSchema,
  /** Every peer the suite compares with, by name, run or not. */
  peers: z.record(z.string(), benchPeerSchema),
  tables: z.array(benchTableSchema),
  /** A Vega-Lite specification of the report's chart (`renderChart` draws it). */
  chart: z
    .custom<TopLevelSpec>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), 'must be a Vega-Lite specification')
    .optional(),
  /** The suite's own measurements, in full. */
  raw: z.unknown().optional(),
})
export type BenchReport = z.infer<typeof benchReportSchema>

/** A report read back (e.g. `JSON.parse` of `<suite>.json`), checked: a `ParseError` names every field that is wrong. */
export function parseBenchReport(value: unknown, source = 'the bench report'): BenchReport {
  return parseInput(benchReportSchema, value, { source })
}

/** A measured number as a cell: null when it is missing or not finite (a report never holds NaN). */
export function numberCell(value: number | undefined, digits?: number): number | null {
  if (value === undefined || !Number.isFinite(value)) return null
  return digits === undefined ? value : Number(value.toFixed(digits))
}

/** The cell of a peer ratio: `ours / peer` rounded, or the plain reason it could not be measured. */
export function ratioCell(ours: number | undefined, peer: number | undefined, unavailable: string | undefined, digits = 2): BenchCell {
  if (unavailable !== undefined) return `peer unavailable: ${unavailable}`
  if (ours === undefined || !Number.isFinite(ours)) return 'not measured'
  if (peer === undefined || !Number.isFinite(peer) || peer <= 0) return 'peer not measured'
  return Number((ours / peer).toFixed(digits))
}
