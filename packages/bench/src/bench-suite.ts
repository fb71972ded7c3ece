import type { z } from 'zod'
import type { BenchReport } from './bench-report.js'

/** What a running suite may be given: a way to stop it, and where its progress and lines go. */
export interface BenchContext {
  /** Aborts the suite between measurements (the report is not written; the promise rejects). */
  signal?: AbortSignal
  /** `done` of `total` units of work finished (`label`: which). */
  onProgress?(done: number, total: number, label?: string): void
  /** A line for the user (what is being measured, a peer that could not run). */
  log?(line: string): void
}

/**
 * A benchmark suite: its options are a zod schema with documented defaults (`runBenchSuite` parses them, so every
 * wrong field is named), and `run` measures and returns the common `BenchReport`.
 */
export interface BenchSuite<Options = unknown> {
  name: string
  /** One sentence: what the suite measures, against what. */
  description: string
  optionsSchema: z.ZodType<Options>
  run(options: Options, context: BenchContext): Promise<BenchReport>
}

/** A suite with its options' type checked against its schema (the registry holds them as `BenchSuite`). */
export function defineBenchSuite<Schema extends z.ZodType>(suite: {
  name: string
  description: string
  optionsSchema: Schema
  run(options: z.output<Schema>, context: BenchContext): Promise<BenchReport>
}): BenchSuite {
  return suite as unknown as BenchSuite
}

/** Seconds since the suite started and its start time, for the report. */
export function startClock(): { startedAt: string; seconds(): number } {
  const startedAt = new Date().toISOString()
  const start = performance.now()
  return { startedAt, seconds: () => Number(((performance.now() - start) / 1000).toFixed(2)) }
}
