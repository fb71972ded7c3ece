import { InvalidArgumentError, parseInput } from '@ludic/core'
import { parseBenchReport, type BenchReport } from './bench-report.js'
import type { BenchContext, BenchSuite } from './bench-suite.js'
import { gamesSuite, kuhnSuite, transferSuite } from './evaluation/evaluation-suites.js'
import { disaggregatedSuite } from './disaggregated/disaggregated-suite.js'
import { collectionSuite } from './perf/collection-suite.js'
import { decodeSuite } from './perf/decode-suite.js'
import { engineSuite } from './perf/engine-suite.js'
import { kernelsSuite } from './perf/kernels-suite.js'
import { tokenizerSuite } from './perf/tokenizer-suite.js'
import { trainStepSuite } from './perf/train-step-suite.js'
import { scaleSuite } from './scale/scale-suite.js'

/**
 * Every suite by name. Speed: `kernels`, `tokenizer`, `train-step`, `decode`, `collection`, `engine`, `disaggregated` (ratios against peers
 * measured side by side in one run). Evaluation: `games` (win rates with 95% Wilson intervals), `kuhn` (exact
 * exploitability), `transfer` (SPIRAL's transfer table).
 */
export const benchSuites: Readonly<Record<string, BenchSuite>> = Object.freeze({
  kernels: kernelsSuite,
  tokenizer: tokenizerSuite,
  'train-step': trainStepSuite,
  decode: decodeSuite,
  collection: collectionSuite,
  engine: engineSuite,
  scale: scaleSuite,
  disaggregated: disaggregatedSuite,
  games: gamesSuite,
  kuhn: kuhnSuite,
  transfer: transferSuite,
})

/** The suites' names, in the order of `benchSuites`. */
export const benchSuiteNames: readonly string[] = Object.freeze(Object.keys(benchSuites))

/**
 * Runs a suite by name: `options` (default `{}`) are parsed with its schema (`parseInput`: a `ParseError` names every
 * wrong field), then the suite runs and its report is checked (`parseBenchReport`). An unknown name is an
 * `InvalidArgumentError` listing the names.
 */
export async function runBenchSuite(name: string, options: unknown = {}, context: BenchContext = {}): Promise<BenchReport> {
  if (typeof name !== 'string' || !Object.hasOwn(benchSuites, name)) {
    throw new InvalidArgumentError({ argument: 'name', value: name, message: `is not a bench suite (${benchSuiteNames.join(', ')})` })
  }
  const suite = benchSuites[name]!
  const parsed = parseInput(suite.optionsSchema, options ?? {}, { source: `the options of bench suite '${name}'` })
  context.signal?.throwIfAborted()
  // The suite's report is checked too: a row that does not fit its columns or a NaN is a suite bug, caught here.
  return parseBenchReport(await suite.run(parsed, context), `the report of bench suite '${name}'`)
}
