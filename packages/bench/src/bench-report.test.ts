import { ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { numberCell, parseBenchReport, ratioCell } from './bench-report.js'
import { describeMachine } from './machine.js'
import { benchReportMarkdown, formatCell } from './report-markdown.js'
import { sampleReport } from './test/sample-report.js'

describe('BenchReport', () => {
  it('survives a JSON round trip and is checked on the way back', () => {
    const report = sampleReport()
    const back = parseBenchReport(JSON.parse(JSON.stringify(report)))
    expect(back).toEqual(report)
  })

  it('names every malformed field: a row of the wrong length, a non-finite number, a missing machine field', () => {
    const report = sampleReport() as unknown as Record<string, unknown>
    const broken = {
      ...report,
      machine: { ...(report.machine as object), node: undefined },
      tables: [{ title: 't', columns: ['a', 'b'], rows: [[1], [Number.NaN, 2]] }],
    }
    let error: unknown
    try {
      parseBenchReport(broken, 'broken.json')
    } catch (caught) {
      error = caught
    }
    expect(ParseError.isInstance(error)).toBe(true)
    const message = (error as Error).message
    expect(message).toContain('broken.json')
    expect(message).toMatch(/machine\.node/)
    expect(message).toContain('tables[0].rows[1][0]')
  })

  it('keeps NaN out of cells and says plainly when a peer is unavailable', () => {
    expect(numberCell(Number.NaN)).toBeNull()
    expect(numberCell(undefined)).toBeNull()
    expect(numberCell(1.23456, 2)).toBe(1.23)
    expect(ratioCell(3, 1.5, undefined)).toBe(2)
    expect(ratioCell(3, 1.5, 'no torch here')).toBe('peer unavailable: no torch here')
    expect(ratioCell(3, undefined, undefined)).toBe('peer not measured')
    expect(ratioCell(undefined, 2, undefined)).toBe('not measured')
  })

  it('describes the machine with node, platform, processors, memory, backend and tfjs version', () => {
    const machine = describeMachine('cpu')
    expect(machine.node).toBe(process.version)
    expect(machine.cpus).toBeGreaterThan(0)
    expect(machine.backend).toBe('cpu')
    expect(machine.tfjsVersion).toMatch(/^\d+\.\d+\.\d+/)
  })
})

describe('benchReportMarkdown', () => {
  it('prints the machine, the peers and each table with right-aligned numbers, escaped pipes and — for nothing', () => {
    const markdown = benchReportMarkdown(sampleReport())
    const lines = markdown.split('\n')
    expect(lines[0]).toBe('# A sample | report')
    expect(markdown).toContain(`Node ${process.version}`)
    expect(markdown).toContain('backend wasm')
    expect(markdown).toContain('Peers: fast 1.2.3; missing: unavailable (not installed).')
    expect(lines).toContain('| case | ours | peer | ours / peer |')
    expect(lines).toContain('| --- | ---: | ---: | ---: |')
    expect(lines).toContain('| a\\|b | 1234.6 | 617.28 | 2 |')
    expect(lines).toContain('| c | — | 10 | peer unavailable: not installed |')
    expect(lines).toContain('- medians after warm-up')
  })

  it('formats cells: integers as they are, 5 significant digits below 1000', () => {
    expect(formatCell(42)).toBe('42')
    expect(formatCell(0.1234567)).toBe('0.12346')
    expect(formatCell(null)).toBe('—')
    expect(formatCell('x\ny')).toBe('x y')
  })
})
