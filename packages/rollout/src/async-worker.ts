/**
 * The entry of a rollout worker thread (built to `dist/async-worker.js`): imports the worker module named by
 * the collector, then plays one batch of episodes per `collect` message with the weights it last received,
 * stamping every sample with their version. Messages are handled one at a time, in order, so weights pushed
 * before a batch is asked for are the weights that batch is played with. A policy with partial rollouts
 * (`VersionedPolicy.partialRollouts`: a local policy on a `GenerationEngine`) gets new weights as soon as they arrive,
 * beside the batch in flight (in order among themselves; `close` waits for them): its running sequences continue on
 * them, and each token carries the version that sampled it (told to the policy with `setPolicyVersion`).
 */
import { parentPort, workerData } from 'node:worker_threads'
import { isPolicy, type Sample } from '@ludic/core'
import { collect } from './collect.js'
import { exportedFunction, importModule } from './import-module.js'
import {
  serializeError,
  serializeFailures,
  type CreateRolloutWorker,
  type FromWorker,
  type RolloutWorkerSetup,
  type ToWorker,
  type VersionedPolicy,
  type WorkerStartData,
  versionedPolicy,
} from './async-protocol.js'

if (parentPort === null) throw new Error('@ludic/rollout async-worker.js must run in a worker thread (createAsyncCollector starts it)')
const port = parentPort
const start = workerData as WorkerStartData
const send = (message: FromWorker) => port.postMessage(message)

async function loadSetup(): Promise<RolloutWorkerSetup> {
  const factory = exportedFunction<CreateRolloutWorker>(await importModule(start.module), 'createRolloutWorker', start.module)
  const setup = (await factory(start.data, { workerIndex: start.workerIndex })) as Partial<RolloutWorkerSetup> | undefined
  if (setup === undefined || setup === null || !Array.isArray(setup.environments) || !isPolicy(setup.policy)) {
    throw new TypeError(`createRolloutWorker of ${start.module} must return { environments, policy (a PolicyV1), prompt?, setWeights?, annotate?, dispose? }`)
  }
  return setup as RolloutWorkerSetup
}

let version = start.initialVersion
/** Collect and close messages in order (and weights, without partial rollouts). */
let chain: Promise<void> = Promise.resolve()
/** Weights with partial rollouts: in order among themselves, beside a batch in flight. */
let weightsChain: Promise<void> = Promise.resolve()

async function applyWeights(setup: RolloutWorkerSetup, versioned: VersionedPolicy | undefined, message: ToWorker & { type: 'weights' }): Promise<void> {
  try {
    const applying = setup.setWeights?.(message.weights, message.version)
    // (A synchronous setWeights is announced before the engine's next iteration; an asynchronous one after it ends, so
    // tokens sampled in between keep the older version: their staleness is overstated, never understated.)
    if (applying !== undefined) await applying
    versioned?.setPolicyVersion(message.version)
    version = message.version
  } catch (error) {
    send({ type: 'error', stage: 'weights', error: serializeError(error) })
  }
}

async function handle(setup: RolloutWorkerSetup, versioned: VersionedPolicy | undefined, message: ToWorker): Promise<void> {
  if (message.type === 'weights') return applyWeights(setup, versioned, message)
  if (message.type === 'close') {
    try {
      await setup.dispose?.()
    } finally {
      send({ type: 'closed' })
      port.close()
    }
    return
  }
  const { plan } = start
  const started = performance.now()
  const startVersion = version
  try {
    const result = await collect({
      environments: [...setup.environments],
      policies: setup.policy,
      seeds: message.seeds,
      groupSize: plan.groupSize,
      concurrency: plan.concurrency,
      maxTurns: plan.maxTurns,
      ...(plan.maxBatchSize === undefined ? {} : { maxBatchSize: plan.maxBatchSize }),
      ...(plan.generateTimeoutMs === undefined ? {} : { generateTimeoutMs: plan.generateTimeoutMs }),
      ...(setup.prompt === undefined ? {} : { prompt: setup.prompt }),
      generation: plan.generation,
      stepping: plan.stepping,
      samplingSeed: message.samplingSeed,
      runId: message.runId,
      policyVersion: startVersion,
      ...(plan.trainRoles === undefined ? {} : { trainRoles: plan.trainRoles }),
      ...(plan.learnerPolicyIds === undefined ? {} : { learnerPolicyIds: plan.learnerPolicyIds }),
    })
    const annotation = setup.annotate === undefined ? undefined : await setup.annotate(result, startVersion)
    send({
      type: 'batch',
      batchIndex: message.batchIndex,
      version: oldestVersion(result.samples, startVersion),
      seconds: (performance.now() - started) / 1000,
      trajectories: result.trajectories,
      samples: result.samples,
      failures: serializeFailures(result.failures),
      ...(annotation === undefined ? {} : { annotation }),
    })
  } catch (error) {
    send({ type: 'error', stage: 'collect', batchIndex: message.batchIndex, error: serializeError(error) })
  }
}

/**
 * The oldest version that played a batch: the oldest of its samples' versions (each its oldest token's, with partial
 * rollouts; never older than the version the batch started with), or the start's when it has no samples.
 */
function oldestVersion(samples: readonly Sample[], startVersion: number): number {
  if (samples.length === 0) return startVersion
  return samples.reduce((oldest, sample) => Math.min(oldest, sample.policyVersion ?? startVersion), Number.POSITIVE_INFINITY)
}

try {
  const setup = await loadSetup()
  const versioned = versionedPolicy(setup.policy)
  versioned?.setPolicyVersion(version)
  const partialRollouts = versioned?.partialRollouts === true
  port.on('message', (message: ToWorker) => {
    if (message.type === 'weights' && partialRollouts) weightsChain = weightsChain.then(() => applyWeights(setup, versioned, message))
    else if (message.type === 'close') {
      const weightsApplied = weightsChain
      chain = chain.then(() => weightsApplied).then(() => handle(setup, versioned, message))
    } else chain = chain.then(() => handle(setup, versioned, message))
  })
  send({ type: 'ready' })
} catch (error) {
  send({ type: 'error', stage: 'setup', error: serializeError(error) })
}
