import { describe, expect, it } from 'vitest'
import { runBenchSuite } from '../bench-suites.js'
import { benchOptionsFromArguments } from '../command-line.js'

describe('disaggregated suite', () => {
  it('--quick: runs the synchronous loop and a trainer with a generation server process, and reports both with the breakdown', async () => {
    const report = await runBenchSuite('disaggregated', { quick: true, target: -2 })
    const [table, evaluations] = report.tables
    expect(table!.rows.map((row) => row[0])).toEqual(['A: synchronous, one process', 'B: disaggregated, 1 server(s)'])
    const raw = report.raw as {
      results: { configuration: string; steps: number; timeToTargetSeconds: number; breakdown: Record<string, number>; evaluations: { step: number }[] }[]
    }
    for (const result of raw.results) {
      expect(result.steps).toBe(2)
      // A target of −2 (below any mean reward) is reached at the first evaluation, the starting adapters.
      expect(result.timeToTargetSeconds).toBe(0)
      expect(result.evaluations.map((evaluation) => evaluation.step)).toEqual([0, 1, 2])
      expect(result.breakdown.update).toBeGreaterThan(0)
      expect(result.breakdown.environment).toBeGreaterThan(0)
    }
    const [sync, disaggregated] = raw.results
    expect(sync!.breakdown.waiting).toBe(0)
    expect(disaggregated!.breakdown.generation).toBeGreaterThan(0)
    expect(disaggregated!.breakdown.push).toBeGreaterThan(0) // adapters were loaded on the server
    expect(evaluations!.rows).toHaveLength(6)
  }, 120_000)

  it('takes --quick from the command line', () => {
    expect(benchOptionsFromArguments('disaggregated', ['--quick', '--servers', '2'])).toMatchObject({ quick: true, servers: 2 })
  })
})
