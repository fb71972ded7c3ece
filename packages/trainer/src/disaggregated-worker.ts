/**
 * The collection thread of a disaggregated rollout source given a `setupModule` (built to
 * `dist/disaggregated-worker.js`): it loads the user's setup (environments, tokenizer, prompt), loads each adapter the
 * trainer saved on the generation servers, and plays batch after batch as soon as the trainer asked for the one
 * before and a fresh enough adapter is loaded — all while the trainer's thread is busy computing an update. It loads
 * no TensorFlow.js: the servers generate.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { serializeError, serializeFailures } from '@ludic/rollout/worker'
import { createChanges, playDisaggregatedBatches } from './disaggregated-play.js'
import type { DisaggregatedThreadMessage, DisaggregatedThreadReply, DisaggregatedThreadStart } from './disaggregated-thread.js'
import { createLoraAdapterLoader, LoraPublishError } from './lora-adapter-loader.js'
import { loadRolloutSetup } from './rollout-setup.js'

if (parentPort === null) throw new Error('@ludic/trainer disaggregated-worker.js must run in a worker thread (createDisaggregatedRolloutSource starts it)')
const port = parentPort
const start = workerData as DisaggregatedThreadStart
let stopped = false
const send = (reply: DisaggregatedThreadReply) => {
  if (!stopped) port.postMessage(reply)
}

try {
  const setup = await loadRolloutSetup(start.setupModule, start.setupData)
  if (setup.tokenizer.vocabSize !== start.vocabSize) {
    throw new RangeError(`the setup module's tokenizer has ${setup.tokenizer.vocabSize} ids, the trainer's ${start.vocabSize}: they must be the same tokenizer`)
  }
  const players = { environments: setup.environments, tokenizer: setup.tokenizer, prompt: setup.prompt }
  const loader = createLoraAdapterLoader(start.loader)
  const changes = createChanges()
  const controller = new AbortController()
  let requested = -1
  let loading: Promise<void> = Promise.resolve()
  let reportedUnloadFailures = 0
  port.on('message', (message: DisaggregatedThreadMessage) => {
    switch (message.type) {
      case 'stop':
        stopped = true
        controller.abort(new Error('the rollout source closed'))
        changes.notify()
        port.close()
        return
      case 'request':
        requested = Math.max(requested, message.stepIndex)
        return changes.notify()
      case 'load': {
        const { adapter } = message
        // In the order sent; a batch waiting for this version starts as soon as it is loaded everywhere.
        loading = loading.then(async () => {
          try {
            await loader.push(adapter, controller.signal)
          } catch (error) {
            if (controller.signal.aborted) return
            send({ type: 'error', stage: 'load', error: serializeError(error), ...(LoraPublishError.isInstance(error) ? { publish: error.toFailure() } : {}) })
            return
          }
          changes.notify()
          const unloadFailures = loader.unloadFailures.slice(reportedUnloadFailures).map((failure) => failure.toFailure())
          reportedUnloadFailures = loader.unloadFailures.length
          send({ type: 'loaded', version: adapter.version, unloadFailures })
        })
        return
      }
      case 'start':
        playDisaggregatedBatches(
          start.plan,
          players,
          () => ({ requested, adapter: loader.current }),
          changes,
          message.first,
          controller.signal,
          (batchIndex, { result, version, seconds }) =>
            send({
              type: 'played',
              batchIndex,
              version,
              seconds,
              trajectories: result.trajectories,
              samples: result.samples,
              failures: serializeFailures(result.failures),
            }),
        ).catch((error: unknown) => {
          if (!controller.signal.aborted) send({ type: 'error', stage: 'play', error: serializeError(error) })
        })
    }
  })
  send({ type: 'ready' })
} catch (error) {
  send({ type: 'error', stage: 'setup', error: serializeError(error) })
}
