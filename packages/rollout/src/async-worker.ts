/**
 * The entry of a rollout worker thread (built to `dist/async-worker.js`): imports the worker module named by
 * the collector, then plays one batch of episodes per `collect` message with the weights it last received,
 * stamping every sample with their version. Messages are handled one at a time, in order, so weights pushed
 * before a batch is asked for are the weights that batch is played with.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { isPolicy } from '@ludic/core'
import { collect } from './collect.js'
import { exportedFunction, importModule } from './import-module.js'
import {
  serializeError,
  serializeFailures,
  type CreateRolloutWorker,
  type FromWorker,
  type RolloutWorkerSetup,
  type ToWorker,
  type WorkerStartData,
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
let chain: Promise<void> = Promise.resolve()

async function handle(setup: RolloutWorkerSetup, message: ToWorker): Promise<void> {
  if (message.type === 'weights') {
    try {
      await setup.setWeights?.(message.weights, message.version)
      version = message.version
    } catch (error) {
      send({ type: 'error', stage: 'weights', error: serializeError(error) })
    }
    return
  }
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
      policyVersion: version,
      ...(plan.trainRoles === undefined ? {} : { trainRoles: plan.trainRoles }),
      ...(plan.learnerPolicyIds === undefined ? {} : { learnerPolicyIds: plan.learnerPolicyIds }),
    })
    const annotation = setup.annotate === undefined ? undefined : await setup.annotate(result, version)
    send({
      type: 'batch',
      batchIndex: message.batchIndex,
      version,
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

try {
  const setup = await loadSetup()
  port.on('message', (message: ToWorker) => {
    chain = chain.then(() => handle(setup, message))
  })
  send({ type: 'ready' })
} catch (error) {
  send({ type: 'error', stage: 'setup', error: serializeError(error) })
}
