import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { InvalidArgumentError } from '@ludic/core'
import { parseBenchReport, type BenchReport } from './bench-report.js'
import { renderChart } from './render-chart.js'
import { benchReportMarkdown } from './report-markdown.js'

/** The files `writeBenchReport` wrote. */
export interface BenchReportFiles {
  json: string
  markdown: string
  /** Present when the report has a chart. */
  svg?: string
  png?: string
}

/**
 * Writes a report into `directory` (made if missing) as `<suite>.json` (the report itself), `<suite>.md`
 * (`benchReportMarkdown`), `<suite>.svg` (its chart, when it has one) and, with `png: true`, `<suite>.png`.
 * The report is checked first (`parseBenchReport`): a malformed one is a `ParseError`, and no file is written.
 */
export async function writeBenchReport(report: BenchReport, directory: string, options: { png?: boolean } = {}): Promise<BenchReportFiles> {
  if (typeof directory !== 'string' || directory.length === 0)
    throw new InvalidArgumentError({ argument: 'directory', value: directory, message: 'must be a path' })
  const checked = parseBenchReport(report, 'report')
  if (!/^[\w-]+$/.test(checked.suite)) {
    throw new InvalidArgumentError({ argument: 'report.suite', value: checked.suite, message: 'must be letters, digits, - or _ (it names the files)' })
  }
  const svg = checked.chart === undefined ? undefined : await renderChart(checked.chart, { format: 'svg' })
  const png = checked.chart === undefined || options.png !== true ? undefined : await renderChart(checked.chart, { format: 'png' })
  await mkdir(directory, { recursive: true })
  const base = join(directory, checked.suite)
  const files: BenchReportFiles = { json: `${base}.json`, markdown: `${base}.md` }
  await writeFile(files.json, `${JSON.stringify(checked, null, 2)}\n`)
  await writeFile(files.markdown, benchReportMarkdown(checked))
  if (svg !== undefined) {
    files.svg = `${base}.svg`
    await writeFile(files.svg, svg)
  }
  if (png !== undefined) {
    files.png = `${base}.png`
    await writeFile(files.png, png)
  }
  return files
}
