import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { deriveSeed, InvalidArgumentError, parseArgument } from '@ludic/core'
import { AsyncCollectorError } from './async-collector-error.js'
import { builtModulePath } from './built-module-path.js'
import type { CollectResult } from './collect.js'
import { deserializeError, deserializeFailures, type FromWorker, type SerializedError, type ToWorker, type WorkerStartData } from './async-protocol.js'

import { asyncCollectorOptionsSchema, type AsyncCollectorOptions } from './async-collector-options.js'

export type { AsyncCollectorOptions } from './async-collector-options.js'

/** One batch of episodes played by a worker with one version of the weights. */
export interface AsyncBatch extends CollectResult {
  batchIndex: number
  /**
   * The oldest weights version that generated any of its tokens: the oldest of its samples' `policyVersion`s (the
   * version the batch started with when it has none). Without partial rollouts every sample has the version the batch
   * was played with; with them (a worker policy on a `GenerationEngine`, see `VersionedPolicy`) weights pushed during the
   * batch apply at once, so a sample's tokens can be of several versions (`Sample.tokenPolicyVersions`) and its
   * `policyVersion` is the oldest of them. `maxStaleness` is checked against this version: the oldest token's.
   */
  policyVersion: number
  workerIndex: number
  /** Seconds the worker spent playing it (and annotating it). */
  seconds: number
  /** What the worker module's `annotate` returned for it, if it has one. */
  annotation?: unknown
}

export interface AsyncCollectorStats {
  batchesStarted: number
  batchesReceived: number
  /** Batches dropped because they were older than the staleness bound when asked for. */
  batchesDropped: number
  /** Seconds `next` spent waiting for a batch, in all. */
  waitSeconds: number
  /** Seconds the workers spent playing, in all. */
  workerSeconds: number
}

export interface AsyncCollector {
  /** Starts the worker threads; resolves when every one has its setup (rejects with the first failure). */
  start(): Promise<void>
  /**
   * New weights for every worker, applied before each one's next batch, or at once, while its batch is in flight, when
   * its policy does partial rollouts (`VersionedPolicy`). Versions increase; the payload is whatever the worker module's
   * `setWeights` takes (structured-cloned, once per worker).
   */
  pushWeights(version: number, weights: unknown): void
  /** The oldest finished batch within the staleness bound of `consumerVersion`; waits for one when none is ready. */
  next(consumerVersion: number): Promise<AsyncBatch>
  readonly stats: Readonly<AsyncCollectorStats>
  /** The newest version pushed. */
  readonly latestVersion: number
  /** Asks every worker to dispose its setup and stops the threads. */
  close(): Promise<void>
}

type Ready = { kind: 'batch'; batch: AsyncBatch } | { kind: 'error'; error: AsyncCollectorError }

interface WorkerSlot {
  index: number
  thread: Worker
  ready: boolean
  busy: boolean
  exited: boolean
}

/**
 * Asynchronous collection (RollArc, LlamaRL): rollout workers in `worker_threads`, each with its own copy of
 * the policy (its own backend when the policy is a local model), play batches of episodes while the consumer
 * (the trainer) updates. New weights are pushed with a version; every sample carries the version it was
 * generated with (and, from a policy that says so, every token: partial rollouts continue running sequences on
 * weights pushed mid-batch), so the loss can correct with importance ratios; `maxStaleness` bounds how old a batch
 * may be (by its oldest token).
 *
 * Batch b plays seeds and sampling seeds that depend only on (`seed`, b); which weights it is played with
 * depends on timing, so unlike `collect` a run is not reproducible bit for bit.
 */
export function createAsyncCollector(options: AsyncCollectorOptions): AsyncCollector {
  const parsed = parseArgument(asyncCollectorOptionsSchema, options, 'options')
  const modulePath = parsed.worker instanceof URL ? (parsed.worker.protocol === 'file:' ? fileURLToPath(parsed.worker) : parsed.worker.href) : parsed.worker
  if (!(parsed.worker instanceof URL) && !parsed.worker.startsWith('/') && !/^[a-z]+:/i.test(parsed.worker)) {
    throw new InvalidArgumentError({
      argument: 'options.worker',
      value: parsed.worker,
      message: 'must be an absolute path or a URL (worker threads resolve relative paths from the process directory)',
    })
  }
  const stats: AsyncCollectorStats = { batchesStarted: 0, batchesReceived: 0, batchesDropped: 0, waitSeconds: 0, workerSeconds: 0 }
  const slots: WorkerSlot[] = []
  const ready: Ready[] = []
  let latestVersion = parsed.initialVersion
  let consumerVersion = parsed.initialVersion
  let nextBatch = 0
  let fatal: AsyncCollectorError | undefined
  let closed = false
  let started: Promise<void> | undefined
  let wake: () => void = () => {}
  let changed = new Promise<void>((resolve) => (wake = resolve))
  const signal = () => {
    const resolve = wake
    changed = new Promise<void>((next) => (wake = next))
    resolve()
  }

  const post = (slot: WorkerSlot, message: ToWorker) => slot.thread.postMessage(message)
  const inFlight = () => slots.filter((slot) => slot.busy).length

  function dispatch(): void {
    if (fatal !== undefined || closed) return
    for (const slot of slots) {
      if (!slot.ready || slot.busy || slot.exited) continue
      if (ready.length + inFlight() >= slots.length + parsed.prefetch) return
      if (consumerVersion - latestVersion > parsed.maxStaleness) return
      const batchIndex = nextBatch++
      const firstSeed = deriveSeed('ludic.async.episodes', parsed.seed, batchIndex) % 2 ** 30
      slot.busy = true
      stats.batchesStarted++
      post(slot, {
        type: 'collect',
        batchIndex,
        seeds: Array.from({ length: parsed.episodesPerBatch }, (_, index) => firstSeed + index),
        samplingSeed: deriveSeed('ludic.async.sampling', parsed.seed, batchIndex),
        runId: `batch-${batchIndex}`,
      })
    }
  }

  function fail(error: AsyncCollectorError): void {
    fatal ??= error
    signal()
  }

  function onMessage(slot: WorkerSlot, message: FromWorker): void {
    switch (message.type) {
      case 'ready':
        slot.ready = true
        break
      case 'batch': {
        slot.busy = false
        stats.batchesReceived++
        stats.workerSeconds += message.seconds
        const failures = deserializeFailures(message.failures)
        ready.push({
          kind: 'batch',
          batch: {
            batchIndex: message.batchIndex,
            policyVersion: message.version,
            workerIndex: slot.index,
            seconds: message.seconds,
            trajectories: message.trajectories,
            samples: message.samples,
            failures,
            ...(message.annotation === undefined ? {} : { annotation: message.annotation }),
          },
        })
        dispatch()
        break
      }
      case 'error': {
        const error = workerError(slot.index, message.stage, message.error, message.batchIndex)
        if (message.stage === 'setup') fail(error)
        else if (message.stage === 'weights') fail(error)
        else {
          slot.busy = false
          ready.push({ kind: 'error', error })
        }
        break
      }
      case 'closed':
        break
    }
    signal()
  }

  function spawn(index: number): WorkerSlot {
    const data: WorkerStartData = {
      module: modulePath,
      data: parsed.workerData,
      workerIndex: index,
      initialVersion: parsed.initialVersion,
      plan: {
        episodesPerBatch: parsed.episodesPerBatch,
        groupSize: parsed.groupSize,
        concurrency: parsed.concurrency,
        maxTurns: parsed.maxTurns,
        maxBatchSize: parsed.maxBatchSize,
        generateTimeoutMs: parsed.generateTimeoutMs,
        generation: parsed.generation,
        trainRoles: parsed.trainRoles,
        learnerPolicyIds: parsed.learnerPolicyIds,
        stepping: parsed.stepping,
      },
    }
    const thread = new Worker(builtModulePath(import.meta.url, 'async-worker', '@ludic/rollout'), {
      workerData: data,
      execArgv: parsed.execArgv ?? withoutSourceCondition(process.execArgv),
    })
    const slot: WorkerSlot = { index, thread, ready: false, busy: false, exited: false }
    thread.on('message', (message: FromWorker) => onMessage(slot, message))
    thread.on('error', (error) =>
      fail(new AsyncCollectorError({ message: `rollout worker ${index} crashed: ${error.name}: ${error.message}`, workerIndex: index, cause: error })),
    )
    thread.on('exit', (code) => {
      slot.exited = true
      if (!closed) fail(new AsyncCollectorError({ message: `rollout worker ${index} exited unexpectedly (code ${code})`, workerIndex: index }))
      signal()
    })
    return slot
  }

  async function start(): Promise<void> {
    if (closed) throw new AsyncCollectorError({ message: 'the collector is closed' })
    started ??= (async () => {
      for (let index = 0; index < parsed.workers; index++) slots.push(spawn(index))
      while (fatal === undefined && !slots.every((slot) => slot.ready)) await changed
      if (fatal !== undefined) {
        await close()
        throw fatal
      }
    })()
    return started
  }

  async function close(): Promise<void> {
    if (closed) return
    closed = true
    await Promise.all(
      slots.map(async (slot) => {
        if (slot.exited) return
        const exited = new Promise<void>((resolve) => slot.thread.once('exit', () => resolve()))
        if (slot.ready) post(slot, { type: 'close' })
        const timer = setTimeout(() => void slot.thread.terminate(), slot.ready ? 10_000 : 0)
        await exited
        clearTimeout(timer)
      }),
    )
    signal()
  }

  return {
    start,
    pushWeights(version, weights) {
      if (!Number.isInteger(version) || version <= latestVersion) {
        throw new InvalidArgumentError({
          argument: 'version',
          value: version,
          message: `must be an integer greater than the newest version pushed (${latestVersion})`,
        })
      }
      if (closed) throw new AsyncCollectorError({ message: 'the collector is closed' })
      latestVersion = version
      for (const slot of slots) if (!slot.exited) post(slot, { type: 'weights', version, weights })
      dispatch()
    },
    async next(version) {
      if (!Number.isInteger(version) || version < consumerVersion) {
        throw new InvalidArgumentError({
          argument: 'consumerVersion',
          value: version,
          message: `must be an integer, not below the last one asked with (${consumerVersion})`,
        })
      }
      if (started === undefined) throw new AsyncCollectorError({ message: 'start() the collector before asking for batches' })
      await started
      consumerVersion = version
      const waitStarted = performance.now()
      try {
        for (;;) {
          if (fatal !== undefined) throw fatal
          if (closed) throw new AsyncCollectorError({ message: 'the collector is closed' })
          for (let index = 0; index < ready.length; ) {
            const entry = ready[index]!
            if (entry.kind === 'batch' && consumerVersion - entry.batch.policyVersion > parsed.maxStaleness) {
              ready.splice(index, 1)
              stats.batchesDropped++
            } else index++
          }
          const entry = ready.shift()
          dispatch()
          if (entry?.kind === 'error') throw entry.error
          if (entry?.kind === 'batch') return entry.batch
          if (inFlight() === 0) {
            throw new AsyncCollectorError({
              message: `no batch can be started: the newest weights pushed (version ${latestVersion}) are more than maxStaleness (${parsed.maxStaleness}) versions behind ${consumerVersion}; push newer weights first`,
            })
          }
          await changed
        }
      } finally {
        stats.waitSeconds += (performance.now() - waitStarted) / 1000
      }
    },
    get stats() {
      return { ...stats }
    },
    get latestVersion() {
      return latestVersion
    },
    close,
  }
}

/** Node options without the `@ludic/source` condition (`--conditions=@ludic/source`, `-C @ludic/source`, …). */
export function withoutSourceCondition(execArgv: readonly string[]): string[] {
  const kept: string[] = []
  for (let index = 0; index < execArgv.length; index++) {
    const option = execArgv[index]!
    if (/^(--conditions|-C)=@ludic\/source$/.test(option)) continue
    if ((option === '--conditions' || option === '-C') && execArgv[index + 1] === '@ludic/source') {
      index++
      continue
    }
    kept.push(option)
  }
  return kept
}

function workerError(
  workerIndex: number,
  stage: 'setup' | 'weights' | 'collect',
  serialized: SerializedError,
  batchIndex: number | undefined,
): AsyncCollectorError {
  const what = stage === 'setup' ? 'failed to start' : stage === 'weights' ? 'could not apply new weights' : `could not play batch ${batchIndex}`
  return new AsyncCollectorError({
    message: `rollout worker ${workerIndex} ${what}: ${serialized.name}: ${serialized.message}`,
    workerIndex,
    cause: deserializeError(serialized),
  })
}
