import { resolve } from 'node:path'
import type { BenchReport } from '@ludic/bench'
import { applyConfigOverrides, createProgressBar, type ProgressBar } from '@ludic/report'
import { ParseError, parseInput } from '@ludic/core'
import { CliError, ConfigError, exitCodes } from '../errors.js'
import { type CommandContext, commandContext, log, progressStream } from '../context.js'
import { importCommandPlugins } from '../plugins.js'

export interface BenchOptions {
  /** The suite's short form (fewer sizes and repetitions), for a quick look. */
  quick?: boolean
  /** Where the report files go. Default `bench-results` (relative to the working directory). */
  out?: string
  /** Also write the chart as PNG. */
  png?: boolean
  /** `path=value` options of the suite, values as YAML (e.g. `presets=[tiny]`, `backends=[wasm]`). */
  set?: readonly string[]
  /** The suite's own options (e.g. `{ checkpoint, games, opponents, episodes }` of `games`), after `set`. */
  suiteOptions?: Record<string, unknown>
  /**
   * Modules imported first (paths relative to the working directory) that register games or estimators the options
   * name, as a config's `plugins:` (`--plugin`).
   */
  plugins?: readonly string[]
}

export interface BenchResult {
  report: BenchReport
  /** The report as Markdown (`benchReportMarkdown`): the tables the command prints. */
  markdown: string
  /** The files written: `<suite>.json`, `<suite>.md`, and the chart when the report has one. */
  files: Record<string, string>
}

/**
 * Runs a suite of `@ludic/bench` (`runBenchSuite`) with a progress bar on stderr and writes its report files
 * (`writeBenchReport`). An unknown suite is a usage error listing the suites.
 */
export async function bench(suite: string, options: BenchOptions = {}, partialContext: Partial<CommandContext> = {}): Promise<BenchResult> {
  const context = commandContext(partialContext)
  const { benchReportMarkdown, benchSuiteNames, benchSuites, runBenchSuite, writeBenchReport } = await import('@ludic/bench') // vega and the suites load only here
  if (!(benchSuiteNames as readonly string[]).includes(suite))
    throw new CliError(`unknown bench suite '${suite}' (allowed: ${benchSuiteNames.join(' | ')})`, exitCodes.usage)
  await importCommandPlugins(options.plugins, context.cwd)
  const stream = progressStream(context)
  let bar: { total: number; bar: ProgressBar } | undefined
  // `--quick`, `--seed` and `--backend` go to the suites that take them.
  const shape = (benchSuites[suite]!.optionsSchema as { shape?: Record<string, unknown> }).shape ?? {}
  const generic: Record<string, unknown> = { quick: options.quick === true ? true : undefined, seed: context.seed, backend: context.backend }
  const suiteOptions = {
    ...Object.fromEntries(Object.entries(generic).filter(([name, value]) => value !== undefined && Object.hasOwn(shape, name))),
    ...(applyConfigOverrides({}, options.set ?? []) as Record<string, unknown>),
    ...options.suiteOptions,
  }
  // The options are the user's own words (flags, `--set`): a wrong one is a usage error listing every wrong field (2).
  try {
    parseInput(benchSuites[suite]!.optionsSchema, suiteOptions, { source: `the options of bench suite '${suite}'` })
  } catch (error) {
    throw ParseError.isInstance(error) ? new ConfigError(error, suiteOptions) : error
  }
  let report: BenchReport
  try {
    report = await runBenchSuite(suite, suiteOptions, {
      signal: context.signal,
      log: (line) => log(context, line),
      onProgress: (done, total, label) => {
        if (stream === false) return
        if (bar === undefined || bar.total !== total) {
          bar?.bar.finish()
          bar = { total, bar: createProgressBar(total, { stream, label: suite }) }
        }
        bar.bar.update(done, label === undefined ? {} : { at: label })
      },
    })
  } finally {
    bar?.bar.finish()
  }
  const files = await writeBenchReport(report, resolve(context.cwd, options.out ?? 'bench-results'), { png: options.png === true })
  return { report, markdown: benchReportMarkdown(report), files: { ...files } }
}

/** The report as Markdown, then where its files are. */
export function benchResultText(result: BenchResult): string {
  return `${result.markdown}\nReport files: ${Object.values(result.files).join(', ')}\n`
}
