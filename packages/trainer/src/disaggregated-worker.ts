/**
 * The collection thread of a disaggregated rollout source given a `setupModule` (built to
 * `dist/disaggregated-worker.js`): it loads the user's setup (environments, tokenizer, prompt) and plays one batch
 * per `play` message against the generation servers, so that the episodes go on stepping while the trainer's thread
 * is busy computing an update. It loads no TensorFlow.js: the servers generate.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { serializeError } from '@ludic/rollout/worker'
import type { DisaggregatedThreadMessage, DisaggregatedThreadReply, DisaggregatedThreadStart } from './disaggregated-thread.js'
import { playDisaggregatedBatch } from './disaggregated-play.js'
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
  // One batch at a time (the source asks for the next once this one is back); `stop` aborts the one in flight.
  let controller = new AbortController()
  port.on('message', (message: DisaggregatedThreadMessage) => {
    if (message.type === 'stop') {
      stopped = true
      controller.abort(new Error('the rollout source closed'))
      port.close()
      return
    }
    controller = new AbortController()
    playDisaggregatedBatch(start.plan, players, message.adapter, message.batchIndex, controller.signal).then(
      ({ result, seconds }) =>
        send({
          type: 'played',
          batchIndex: message.batchIndex,
          seconds,
          trajectories: result.trajectories,
          samples: result.samples,
          failures: result.failures.map((failure) => ({ ...failure, error: serializeError(failure.error) })),
        }),
      (error: unknown) => send({ type: 'error', batchIndex: message.batchIndex, error: serializeError(error) }),
    )
  })
  send({ type: 'ready' })
} catch (error) {
  send({ type: 'error', error: serializeError(error) })
}
