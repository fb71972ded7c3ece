import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError, ParseError } from '@ludic/core'
import { afterEach, describe, expect, it } from 'vitest'
import { sampleReport } from './test/sample-report.js'
import { parseBenchReport } from './bench-report.js'
import { renderChart } from './render-chart.js'
import { benchReportMarkdown } from './report-markdown.js'
import { writeBenchReport } from './write-report.js'

const pngMagic = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
const directories: string[] = []
afterEach(async () => {
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

describe('renderChart', () => {
  const spec = sampleReport().chart!

  it('draws a Vega-Lite specification as an SVG document', async () => {
    const svg = await renderChart(spec, { format: 'svg' })
    expect(svg.startsWith('<svg')).toBe(true)
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true)
    expect(svg).not.toMatch(/NaN/)
  })

  it('draws it as a PNG (resvg)', async () => {
    const png = await renderChart(spec, { format: 'png', scale: 1 })
    expect(png).toBeInstanceOf(Uint8Array)
    expect([...png.subarray(0, 8)]).toEqual(pngMagic)
  })

  it('refuses an unknown format and a bad scale', async () => {
    await expect(renderChart(spec, { format: 'jpeg' as 'svg' })).rejects.toSatisfy(InvalidArgumentError.isInstance)
    await expect(renderChart(spec, { format: 'png', scale: 0 })).rejects.toThrow(/options.scale/)
  })
})

describe('writeBenchReport', () => {
  it('writes <suite>.json, .md, .svg and .png; the JSON reads back as the report', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'ludic-bench-report-'))
    directories.push(directory)
    const report = sampleReport()
    const files = await writeBenchReport(report, join(directory, 'nested'), { png: true })
    expect(files).toEqual({
      json: join(directory, 'nested', 'sample.json'),
      markdown: join(directory, 'nested', 'sample.md'),
      svg: join(directory, 'nested', 'sample.svg'),
      png: join(directory, 'nested', 'sample.png'),
    })
    expect(parseBenchReport(JSON.parse(await readFile(files.json, 'utf8')))).toEqual(report)
    expect(await readFile(files.markdown, 'utf8')).toBe(benchReportMarkdown(report))
    expect(await readFile(files.svg!, 'utf8')).toMatch(/^<svg/)
    expect([...(await readFile(files.png!)).subarray(0, 8)]).toEqual(pngMagic)
  })

  it('writes no chart files for a report without a chart, and refuses a malformed report or a suite name that is no file name', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'ludic-bench-report-'))
    directories.push(directory)
    const { chart: _chart, ...withoutChart } = sampleReport()
    const files = await writeBenchReport(withoutChart, directory, { png: true })
    expect(files.svg).toBeUndefined()
    expect(files.png).toBeUndefined()
    await expect(writeBenchReport({ ...withoutChart, durationSeconds: Number.NaN }, directory)).rejects.toSatisfy(ParseError.isInstance)
    await expect(writeBenchReport({ ...withoutChart, suite: '../escape' }, directory)).rejects.toThrow(/report.suite/)
  })
})
