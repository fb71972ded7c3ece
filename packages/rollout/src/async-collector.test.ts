import { fileURLToPath } from 'node:url'
import { InvalidArgumentError, sampleSchema } from '@ludic/core'
import { afterEach, describe, expect, it } from 'vitest'
import { AsyncCollectorError } from './async-collector-error.js'
import { createAsyncCollector, withoutSourceCondition, type AsyncCollector, type AsyncCollectorOptions } from './async-collector.js'
import { collect } from './collect.js'
import { createRolloutWorker, type TestWorkerData } from './test/async-worker-module.js'

// The worker threads run the built entry (dist/async-worker.js) and load this TypeScript module through tsx.
const workerModule = fileURLToPath(new URL('./test/async-worker-module.ts', import.meta.url))
const open: AsyncCollector[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((collector) => collector.close()))
})

function collector(data: TestWorkerData, options: Partial<AsyncCollectorOptions> = {}): AsyncCollector {
  const created = createAsyncCollector({ worker: workerModule, workerData: data, episodesPerBatch: 4, maxTurns: 12, seed: 7, ...options })
  open.push(created)
  return created
}

describe('createAsyncCollector', () => {
  it('plays batches in a worker thread and stamps every sample with the version of the weights that played it', async () => {
    const async = collector({ weights: 2 })
    await async.start()
    const first = await async.next(0)
    expect(first).toMatchObject({ batchIndex: 0, policyVersion: 0, workerIndex: 0, failures: [] })
    expect(first.trajectories).toHaveLength(4)
    expect(first.samples.length).toBeGreaterThan(0)
    for (const sample of first.samples) {
      expect(sampleSchema.safeParse(sample).success).toBe(true)
      expect(sample.policyVersion).toBe(0)
      expect(sample.stateKey).toMatch(new RegExp(`^${sample.role} at -?\\d+$`)) // the state key crossed the thread
      expect(sample.rolloutLogprobs[0]).toBeCloseTo(-0.02, 6)
    }
    expect(first.trajectories.every((trajectory) => trajectory.turns.every((turn) => turn.action === '[right]'))).toBe(true)
    // The worker module's annotate ran in the worker on the batch it played.
    expect(first.annotation).toEqual({ samples: first.samples.length, version: 0 })

    // Batch 1 was started (with version 0) while we held batch 0; weights 3 arrive before batch 2.
    async.pushWeights(1, 3)
    const second = await async.next(1)
    expect(second).toMatchObject({ batchIndex: 1, policyVersion: 0 })
    const third = await async.next(1)
    expect(third).toMatchObject({ batchIndex: 2, policyVersion: 1 })
    expect(third.samples.every((sample) => sample.policyVersion === 1 && Math.abs(sample.rolloutLogprobs[0]! + 0.03) < 1e-6)).toBe(true)
    expect(third.trajectories.every((trajectory) => trajectory.turns.every((turn) => turn.action === '[left]'))).toBe(true)
    expect(async.stats).toMatchObject({ batchesReceived: 3, batchesDropped: 0 })
    expect(async.latestVersion).toBe(1)
  })

  it("plays the same episodes as collect would with the batch's seeds, and different seeds for every batch", async () => {
    const async = collector({ weights: 4 })
    await async.start()
    const batches = [await async.next(0), await async.next(0)]
    const seedsOf = (batch: (typeof batches)[number]) => batch.trajectories.map((trajectory) => trajectory.seed)
    expect(new Set([...seedsOf(batches[0]!), ...seedsOf(batches[1]!)]).size).toBe(8)
    const setup = createRolloutWorker({ weights: 4 })
    const local = await collect({
      environments: [...setup.environments],
      policies: setup.policy,
      seeds: seedsOf(batches[1]!),
      maxTurns: 12,
      runId: 'batch-1',
      policyVersion: 0,
      prompt: '{observation}',
      generation: { maxTokens: 256 },
    })
    const strip = (trajectories: typeof local.trajectories) =>
      trajectories.map((trajectory) => ({ ...trajectory, turns: trajectory.turns.map(({ action, role, rewards }) => ({ action, role, rewards })) }))
    expect(strip(batches[1]!.trajectories)).toEqual(strip(local.trajectories))
  })

  it('drops batches older than the staleness bound and starts none while the newest weights are too old', async () => {
    const async = collector({ weights: 2, generateDelayMs: 5 }, { maxStaleness: 1, prefetch: 2 })
    await async.start()
    expect((await async.next(0)).policyVersion).toBe(0)
    // Version 0 batches wait (prefetch); the consumer moves to version 2 without pushing: too stale to use or start.
    await expect(async.next(2)).rejects.toThrow(/newest weights pushed \(version 0\) are more than maxStaleness \(1\) versions behind 2/)
    async.pushWeights(2, 5)
    const fresh = await async.next(2)
    expect(fresh.policyVersion).toBe(2)
    expect(async.stats.batchesDropped).toBeGreaterThanOrEqual(1)
  })

  it('spreads batches over several workers', async () => {
    const async = collector({ weights: 2, generateDelayMs: 20 }, { workers: 2 })
    await async.start()
    const batches = [await async.next(0), await async.next(0), await async.next(0), await async.next(0)]
    expect(new Set(batches.map((batch) => batch.batchIndex)).size).toBe(4)
    expect(new Set(batches.map((batch) => batch.workerIndex))).toEqual(new Set([0, 1]))
  })

  it('reports failed episodes of a batch as failures with their errors, and goes on', async () => {
    const async = collector({ weights: 2, failEpisodesEvery: 2 }, { episodesPerBatch: 6, concurrency: 1 }) // one request per generate call
    await async.start()
    const batch = await async.next(0)
    expect(batch.failures.length).toBeGreaterThan(0)
    expect(batch.failures.length).toBeLessThan(6)
    for (const failure of batch.failures) {
      expect(failure.seed % 2).toBe(0)
      expect(failure.error).toBeInstanceOf(Error)
      expect(String((failure.error as Error).message)).toMatch(/refused/)
    }
    expect(batch.trajectories).toHaveLength(6)
    expect(batch.samples.every((sample) => !batch.failures.some((failure) => failure.trajectoryId === sample.trajectoryId))).toBe(true)
    expect((await async.next(0)).batchIndex).toBe(1)
  })

  it('rejects start with the worker module error when a setup fails, and stops its threads', async () => {
    const async = collector({ weights: 2, failSetup: true }, { workers: 2 })
    const error = await async.start().catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(AsyncCollectorError)
    expect((error as AsyncCollectorError).message).toMatch(/rollout worker \d failed to start: RangeError: no backend for this test/)
    await expect(async.next(0)).rejects.toThrow(AsyncCollectorError)
  })

  it('fails next() clearly when a worker dies or cannot take new weights', async () => {
    const dying = collector({ weights: 2, exitAtVersion: 1 })
    await dying.start()
    await dying.next(0)
    await dying.next(0)
    dying.pushWeights(1, 3)
    await expect(
      (async () => {
        for (let attempt = 0; attempt < 4; attempt++) await dying.next(1)
      })(),
    ).rejects.toThrow(/rollout worker 0 exited unexpectedly \(code 3\)/)

    const refusing = collector({ weights: 2, failWeightsVersion: 1 })
    await refusing.start()
    await refusing.next(0)
    refusing.pushWeights(1, 9)
    await expect(
      (async () => {
        for (let attempt = 0; attempt < 4; attempt++) await refusing.next(1)
      })(),
    ).rejects.toThrow(/rollout worker 0 could not apply new weights: TypeError: weights 9 do not fit/)
  })

  it('names the argument and value of bad input', async () => {
    expect(() => createAsyncCollector({ worker: 'relative/module.js' })).toThrow(InvalidArgumentError)
    expect(() => createAsyncCollector({ worker: 'relative/module.js' })).toThrow(/options.worker/)
    expect(() => createAsyncCollector({ worker: workerModule, workers: 0 })).toThrow(/options.workers/)
    expect(() => createAsyncCollector({ worker: workerModule, maxStaleness: -1 })).toThrow(/options.maxStaleness/)
    const async = collector({ weights: 2 })
    await expect(async.next(0)).rejects.toThrow(/start\(\) the collector/)
    await async.start()
    expect(() => async.pushWeights(0, 1)).toThrow(/version.*greater than the newest version pushed \(0\)/)
    expect(() => async.pushWeights(1.5, 1)).toThrow(InvalidArgumentError)
    await async.next(3).catch(() => undefined)
    await expect(async.next(2)).rejects.toThrow(/consumerVersion.*not below the last one asked with \(3\)/)
    await async.close()
    await expect(async.next(3)).rejects.toThrow(/closed/)
  })

  it("keeps the process's Node options for the workers, less the @ludic/source condition", () => {
    expect(
      withoutSourceCondition(['--conditions=@ludic/source', '--max-old-space-size=4096', '-C', '@ludic/source', '--conditions', 'other', '-C=@ludic/source']),
    ).toEqual(['--max-old-space-size=4096', '--conditions', 'other'])
  })
})
