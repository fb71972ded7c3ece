import { describe, expect, it } from 'vitest'
import { runBenchSuite } from '../bench-suites.js'
import { benchOptionsFromArguments } from '../command-line.js'

describe('disaggregated suite', () => {
  type Raw = {
    results: {
      configuration: string
      steps: number
      timeToTargetSeconds: number
      breakdown: Record<string, number | undefined> & { server?: { threads?: number } }
      evaluations: { step: number }[]
    }[]
  }

  /** What both ways of playing B's episodes report: two steps each, the target at step 0, the breakdown filled in. */
  function checkBoth(raw: Raw) {
    for (const result of raw.results) {
      expect(result.steps).toBe(2)
      // A target of −2 (below any mean reward) is reached at the first evaluation, the starting adapters.
      expect(result.timeToTargetSeconds).toBe(0)
      expect(result.evaluations.map((evaluation) => evaluation.step)).toEqual([0, 1, 2])
      expect(result.breakdown.update).toBeGreaterThan(0)
    }
    const [sync, disaggregated] = raw.results
    expect(sync!.breakdown.waiting).toBe(0)
    expect(sync!.breakdown.environment).toBeGreaterThan(0)
    expect(disaggregated!.breakdown.generation).toBeGreaterThan(0)
    expect(disaggregated!.breakdown.push).toBeGreaterThan(0) // adapters were loaded on the server
  }

  it('--quick: runs the synchronous loop and a trainer with a generation server process and a collection thread, and reports both with the breakdown', async () => {
    const report = await runBenchSuite('disaggregated', { quick: true, target: -2 })
    const [table, evaluations] = report.tables
    expect(table!.rows.map((row) => row[0])).toEqual(['A: synchronous, one process', 'B: disaggregated, 1 server(s), episodes on a collection thread'])
    checkBoth(report.raw as Raw)
    // The games ran in the collection thread: their time is not measured apart there.
    expect((report.raw as Raw).results[1]!.breakdown.environment).toBeUndefined()
    expect((report.raw as Raw).results[1]!.breakdown.server?.threads).toBe(1) // WebAssembly's default
    expect(evaluations!.rows).toHaveLength(6)
  })

  it("--quick with collectionThread false: B's episodes on the trainer's thread, their environment time measured; serverThreads reaches the servers", async () => {
    const report = await runBenchSuite('disaggregated', {
      quick: true,
      target: -2,
      collectionThread: false,
      serverThreads: 2,
      configurations: ['sync', 'disaggregated'],
    })
    expect(report.tables[0]!.rows[1]![0]).toBe("B: disaggregated, 1 server(s), episodes on the trainer's thread")
    checkBoth(report.raw as Raw)
    expect((report.raw as Raw).results[1]!.breakdown.environment).toBeGreaterThan(0)
    expect((report.raw as Raw).results[1]!.breakdown.server?.threads).toBe(2) // the server's WebAssembly backend, two threads
    expect(report.tables[0]!.notes!.join(' ')).toContain('computes with 2 thread(s)')
  })

  it("--quick with engine: B's server generates on the generation engine, its adapter's requests decoding together", async () => {
    const report = await runBenchSuite('disaggregated', { quick: true, target: -2, engine: true, configurations: ['disaggregated'] })
    const [table] = report.tables
    expect(table!.rows.map((row) => row[0])).toEqual(['B: disaggregated, 1 server(s) on the generation engine, episodes on a collection thread'])
    expect(table!.columns).toContain('rows per server decode step')
    const [result] = (report.raw as Raw).results
    expect(result!.steps).toBe(2)
    expect(result!.breakdown.push).toBeGreaterThan(0) // adapters were loaded on the server
    const server = result!.breakdown.server as { generatedTokens: number; decodeSteps: number; generateCalls: number; generateRows: number }
    expect(server.decodeSteps).toBeGreaterThan(0) // the engine generated (without it, no decode steps are reported)
    expect(server.generateRows).toBe(server.generateCalls) // each request went to the engine at once, no batching window
    expect(server.generatedTokens).toBeGreaterThan(server.decodeSteps) // some decode steps held more than one sequence
  })

  it('takes --quick from the command line', async () => {
    expect(benchOptionsFromArguments('disaggregated', ['--quick', '--servers', '2', '--engine', 'true'])).toMatchObject({
      quick: true,
      servers: 2,
      engine: true,
    })
    expect(benchOptionsFromArguments('disaggregated', ['--collectionThread', 'false', '--serverBatchWindowMs', '20', '--serverThreads', '1'])).toMatchObject({
      collectionThread: false,
      serverBatchWindowMs: 20,
      serverThreads: 1,
    })
    await expect(runBenchSuite('disaggregated', benchOptionsFromArguments('disaggregated', ['--serverThreads', '0']))).rejects.toThrow(/serverThreads/)
  })
})
