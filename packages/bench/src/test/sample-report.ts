import { ratioCell, type BenchReport } from '../bench-report.js'
import { describeMachine } from '../machine.js'

/** A small report with every part: two peers (one unavailable), a table with a missing figure, notes, a chart, raw data. */
export function sampleReport(): BenchReport {
  return {
    suite: 'sample',
    title: 'A sample | report',
    startedAt: '2026-01-01T00:00:00.000Z',
    durationSeconds: 1.5,
    machine: describeMachine('wasm'),
    peers: { fast: { available: true, version: '1.2.3' }, missing: { available: false, reason: 'not installed' } },
    tables: [
      {
        title: 'speeds',
        columns: ['case', 'ours', 'peer', 'ours / peer'],
        rows: [
          ['a|b', 1234.5678, 617.28, ratioCell(1234.5678, 617.28, undefined)],
          ['c', null, 10, ratioCell(5, undefined, 'not installed')],
        ],
        notes: ['medians after warm-up'],
      },
    ],
    chart: {
      data: { values: [{ x: 1, y: 2 }] },
      mark: 'point',
      encoding: { x: { field: 'x', type: 'quantitative' }, y: { field: 'y', type: 'quantitative' } },
    },
    raw: { anything: [1, 2, 3] },
  }
}
