import { availableParallelism } from 'node:os'
import { initTensors } from '@ludic/tensors'
import { beforeAll, describe, expect, it } from 'vitest'
import { runBenchSuite } from '../bench-suites.js'
import { benchOptionsFromArguments } from '../command-line.js'
import { overlapAccounting } from './disaggregated-suite.js'

// The suites share this process's backend: WebAssembly on one thread, whichever test runs first.
beforeAll(() => initTensors({ backend: 'wasm', verbose: false }))

describe('disaggregated suite', () => {
  type Raw = {
    results: {
      configuration: string
      steps: number
      timeToTargetSeconds: number
      trainingSeconds: number
      breakdown: Record<string, number | undefined> & { server?: { threads?: number; cpuSeconds?: number } }
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
      // The process's CPU time over the run: positive, and at most every core busy throughout (a little slack for the clocks).
      expect(result.breakdown.trainerCpuSeconds).toBeGreaterThan(0)
      expect(result.breakdown.trainerCpuSeconds).toBeLessThan(availableParallelism() * result.trainingSeconds + 0.5)
    }
    const [sync, disaggregated] = raw.results
    expect(sync!.breakdown.waiting).toBe(0)
    expect(sync!.breakdown.environment).toBeGreaterThan(0)
    expect(disaggregated!.breakdown.generation).toBeGreaterThan(0)
    expect(disaggregated!.breakdown.push).toBeGreaterThan(0) // adapters were loaded on the server
    expect(disaggregated!.breakdown.server?.cpuSeconds).toBeGreaterThan(0) // the server generated, on its own CPU
    expect(sync!.breakdown.server).toBeUndefined()
  }

  it('--quick: runs the synchronous loop and a trainer with a generation server process and a collection thread, and reports both with the breakdown', async () => {
    const report = await runBenchSuite('disaggregated', { quick: true, target: -2 })
    const [table, , evaluations] = report.tables
    expect(table!.rows.map((row) => row[0])).toEqual(['A: synchronous, one process', 'B: disaggregated, 1 server(s), episodes on a collection thread'])
    checkBoth(report.raw as Raw)
    // The accounting: one row, B against A, its figures from the two results.
    const accounting = report.tables.find((candidate) => candidate.title.startsWith('Overlap accounting'))
    expect(accounting!.rows).toHaveLength(1)
    const [sync, disaggregated] = (report.raw as Raw).results
    expect(accounting!.rows[0]![2]).toBeCloseTo(sync!.breakdown.trainerCpuSeconds!, 1)
    expect(accounting!.rows[0]![10]).toBeCloseTo(disaggregated!.breakdown.trainerCpuSeconds! + disaggregated!.breakdown.server!.cpuSeconds!, 1)
    expect(table!.notes!.join(' ')).toContain("the trainer's backend computes with 1 thread(s)")
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
    expect(report.tables[0]!.notes!.join(' ')).toContain("each server's with 2 thread(s)")
  })

  it("--quick with engine and partialRollouts: B's server generates on the generation engine (its adapter's requests decoding together), the option reaches B and the staleness column is filled", async () => {
    const report = await runBenchSuite('disaggregated', { quick: true, target: -2, engine: true, partialRollouts: true, configurations: ['disaggregated'] })
    const [table] = report.tables
    expect(table!.rows.map((row) => row[0])).toEqual([
      'B: disaggregated, 1 server(s) on the generation engine, partial rollouts, episodes on a collection thread',
    ])
    const staleness = table!.rows[0]![table!.columns.indexOf('token staleness (mean of the steps)')] as number
    expect(staleness).toBeGreaterThanOrEqual(0)
    expect(staleness).toBeLessThanOrEqual(1) // maxStaleness 1
    expect(table!.notes!.join(' ')).toContain('partial rollouts: each turn on the newest adapter loaded when it was issued')
    expect(table!.columns).toContain('rows per server decode step')
    const [result] = (report.raw as Raw).results
    expect(result!.steps).toBe(2)
    expect(result!.breakdown.push).toBeGreaterThan(0) // adapters were loaded on the server
    const server = result!.breakdown.server as { generatedTokens: number; decodeSteps: number; generateCalls: number; generateRows: number }
    expect(server.decodeSteps).toBeGreaterThan(0) // the engine generated (without it, no decode steps are reported)
    expect(server.generateRows).toBe(server.generateCalls) // each request went to the engine at once, no batching window
    expect(server.generatedTokens).toBeGreaterThan(server.decodeSteps) // some decode steps held more than one sequence
  })

  it("overlapAccounting: the pipeline bound from A's collection, the capacity bound from its CPU, the lower binding", () => {
    // A: 40 s, of which 10 s collecting, 40 s of CPU on 2 cores (one busy on average).
    const free = overlapAccounting({ trainingSeconds: 40, generation: 9, environment: 1, cpuSeconds: 40 }, { trainingSeconds: 32, cpuSeconds: 50 }, 2)
    expect(free.syncCoresBusy).toBe(1)
    expect(free.pipelineBound).toBeCloseTo(40 / 30) // the update's 30 s stay
    expect(free.capacityBound).toBe(2)
    expect(free.bound).toBeCloseTo(40 / 30)
    expect(free.speedup).toBe(1.25)
    expect(free.shareOfBound).toBeCloseTo(1.25 / (40 / 30))
    expect(free.cpuRatio).toBe(1.25)
    expect(free.disaggregatedCoresBusy).toBeCloseTo(50 / 32)
    expect(free.disaggregatedCapacityBound).toBe(1.6)
    // Every core busy in A: nothing left for the overlap, whatever A's collection.
    const full = overlapAccounting({ trainingSeconds: 40, generation: 20, environment: 0, cpuSeconds: 80 }, { trainingSeconds: 50, cpuSeconds: 90 }, 2)
    expect(full.pipelineBound).toBe(2)
    expect(full.capacityBound).toBe(1)
    expect(full.bound).toBe(1)
    expect(full.shareOfBound).toBe(0.8)
  })

  it('trainerThreads: refused naming it when the backend already runs on other threads, on a backend without threads, past 8 on WebAssembly; as many as it has, accepted', async () => {
    await expect(runBenchSuite('disaggregated', { quick: true, trainerThreads: 2, configurations: ['sync'] })).rejects.toThrow(
      /options\.trainerThreads.*computes with 1 thread\(s\) \(started earlier in this process/,
    )
    await expect(runBenchSuite('disaggregated', { quick: true, trainerThreads: 2, backend: 'cpu' })).rejects.toThrow(
      /options\.trainerThreads.*needs backend wasm or tensorflow/,
    )
    await expect(runBenchSuite('disaggregated', { quick: true, trainerThreads: 9 })).rejects.toThrow(/options\.trainerThreads.*at most 8 on WebAssembly/)
    await expect(runBenchSuite('disaggregated', { quick: true, partialRollouts: true, configurations: ['sync'] })).rejects.toThrow(
      /options\.partialRollouts.*must include 'disaggregated'/,
    )
    const report = await runBenchSuite('disaggregated', { quick: true, target: -2, trainerThreads: 1, configurations: ['sync'] })
    expect(report.tables[0]!.notes!.join(' ')).toContain("the trainer's backend computes with 1 thread(s)")
    // Without B, no accounting table.
    expect(report.tables.map((table) => table.title).some((title) => title.startsWith('Overlap accounting'))).toBe(false)
  })

  it('takes --quick from the command line', async () => {
    expect(benchOptionsFromArguments('disaggregated', ['--quick', '--servers', '2', '--engine', 'true'])).toMatchObject({
      quick: true,
      servers: 2,
      engine: true,
    })
    expect(
      benchOptionsFromArguments('disaggregated', [
        '--collectionThread',
        'false',
        '--serverBatchWindowMs',
        '20',
        '--serverThreads',
        '1',
        '--trainerThreads',
        '1',
      ]),
    ).toMatchObject({
      collectionThread: false,
      serverBatchWindowMs: 20,
      serverThreads: 1,
      trainerThreads: 1,
    })
    await expect(runBenchSuite('disaggregated', benchOptionsFromArguments('disaggregated', ['--serverThreads', '0']))).rejects.toThrow(/serverThreads/)
  })
})
