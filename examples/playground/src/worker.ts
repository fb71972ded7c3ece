/**
 * The training worker: the session runs here, off the page's thread, so the page stays responsive. Requests queue
 * and run one at a time between training steps (a game's move waits at most one step); pause stops after the step
 * in flight, resume goes on, reset drops the model.
 */
import { initTensors } from '@ludic/tensors'
import simdWasm from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm?url'
import threadedWasm from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-threaded-simd.wasm?url'
import plainWasm from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm?url'
import * as tf from '@tensorflow/tfjs-core'
import type { AnswerValue, BackendChoice, Envelope, Event, Phase, Request } from './protocol.js'
import { lastLogits, PlaygroundSession } from './session.js'

const post = (event: Event, transfer: Transferable[] = []) => (self as unknown as Worker).postMessage(event, transfer)

let session: PlaygroundSession | undefined
let backend: string | undefined
let phase: Phase = 'idle'
/** Whether the backend's synchronous reads work (undefined: not checked, for the backend check only; see `useBackend`). */
let synchronousReads: boolean | undefined = true
let paused = false
/** Bumped by reset: a training loop of an older generation stops. */
let generation = 0
let warmUpStep = 0
/** Aborted by reset: a warm-up in flight stops after its update. */
let stopping = new AbortController()
const queue: Envelope[] = []
/** The queue being worked through, when it is. */
let draining: Promise<void> | undefined
/** The training loop in flight, when one is. */
let training: Promise<void> | undefined

function status(message?: string): void {
  post({
    kind: 'status',
    phase,
    ...(backend === undefined ? {} : { backend, synchronousReads }),
    step: session?.steps ?? 0,
    steps: session?.recipe.steps ?? 0,
    ...(session === undefined ? {} : { warmUpStep, warmUpSteps: session.recipe.sftSteps }),
    ...(message === undefined ? {} : { message }),
  })
}

/**
 * Starts the backend. Training and play read tensors synchronously, so a backend whose synchronous reads are wrong
 * here is refused (`initTensors`'s BackendError says why); `asyncReadsOnly` keeps it for the backend check (`probe`,
 * `logits`: forward passes read with await) and refuses everything else.
 */
async function useBackend(choice: BackendChoice, asyncReadsOnly = false): Promise<void> {
  const wasmPaths = { 'tfjs-backend-wasm.wasm': plainWasm, 'tfjs-backend-wasm-simd.wasm': simdWasm, 'tfjs-backend-wasm-threaded-simd.wasm': threadedWasm }
  const runtime = await initTensors({
    ...(choice === 'auto' ? {} : { backend: choice }),
    wasmPaths,
    verbose: false,
    requireSynchronousReads: !asyncReadsOnly,
  })
  backend = runtime.backend
  synchronousReads = runtime.synchronousReads
}

/** Lets pause/reset messages arrive and queued requests run, between training steps. */
async function between(own: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 0))
  if (own === generation) await drain()
}

async function train(own: number): Promise<void> {
  const current = session!
  phase = 'warming-up'
  status()
  await current.warmUp({
    onStep: (step, loss) => {
      warmUpStep = step
      post({ kind: 'warmUp', step, loss })
    },
    signal: stopping.signal,
  })
  if (own !== generation) return
  post({ kind: 'evaluation', evaluation: await current.evaluate(), warmedUp: true })
  phase = 'training'
  status()
  while (own === generation && current.steps < current.recipe.steps) {
    await between(own)
    if (own !== generation) return
    if (paused) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      continue
    }
    const report = await current.trainStep()
    if (own !== generation) return
    post({ kind: 'step', report })
    const every = current.recipe.evaluateEvery
    if ((every > 0 && report.step % every === 0) || report.step === current.recipe.steps) {
      post({ kind: 'evaluation', evaluation: await current.evaluate(), warmedUp: false })
    }
    status()
  }
  if (own !== generation) return
  phase = 'done'
  status()
  // Requests still come while done: serve them as they arrive.
}

async function answer(request: Request): Promise<AnswerValue> {
  switch (request.kind) {
    case 'start': {
      reset()
      await useBackend(request.backend)
      session = PlaygroundSession.create(request.recipe)
      const own = generation
      const current = session
      training = train(own)
        .catch((error: unknown) => {
          if (own === generation) fail(error)
        })
        .finally(() => {
          if (own === generation) training = undefined
          else current.dispose()
        })
      return { ok: true }
    }
    case 'load': {
      reset()
      await useBackend(request.backend, request.asyncReadsOnly === true)
      session = await PlaygroundSession.fromFiles(request.files, { game: request.game })
      phase = 'done'
      status(synchronousReads === true ? 'model loaded' : 'model loaded for the backend check only (asyncReadsOnly)')
      return { ok: true }
    }
    case 'reset':
      reset()
      status()
      return { ok: true }
    default:
      break
  }
  const current = session
  if (current === undefined) throw new Error('no model yet: start training or load a model first')
  if (synchronousReads !== true && !['probe', 'logits', 'files'].includes(request.kind)) {
    throw new Error(`${backend} was started for the backend check only (asyncReadsOnly): forward passes read with await run on it, nothing else`)
  }
  switch (request.kind) {
    case 'evaluate':
      return current.evaluate()
    case 'newGame':
      return current.newGame(request.humanRole)
    case 'play':
      return current.play(request.action)
    case 'probabilities':
      return current.moveProbabilities(request.prompt, request.actions)
    case 'prefer':
      return { preferences: current.addPreference({ prompt: request.prompt, chosen: request.chosen, rejected: request.rejected }) }
    case 'trainPreferences':
      return { metrics: await current.trainPreferences({ steps: request.steps }) }
    case 'files':
      return current.files()
    case 'logits':
      return { logits: await lastLogits(current.model, current.tokenizer.encode(request.prompt, { addSpecialTokens: false })) }
    case 'probe':
      return probe(current, request.examples)
    default:
      throw new Error(`unknown request ${JSON.stringify(request)}`)
  }
}

/** The backend check: the mean NLL of `examples`' responses and the logits after the first prompt, with no update. */
async function probe(
  current: PlaygroundSession,
  examples: { prompt: string; response: string }[],
): Promise<{ loss: number; logits: number[]; backend: string }> {
  let total = 0
  let count = 0
  for (const { prompt, response } of examples) {
    const promptIds = Array.from(current.tokenizer.encode(prompt, { addSpecialTokens: false }))
    const responseIds = Array.from(current.tokenizer.encode(response, { addSpecialTokens: false }))
    const ids = [...promptIds, ...responseIds]
    const logprobTensor = tf.tidy(() => {
      const logits = current.model.forward(tf.tensor2d([ids], [1, ids.length], 'int32')) as tf.Tensor3D
      return tf.logSoftmax(tf.squeeze(logits, [0]) as tf.Tensor2D)
    })
    const logprobs = (await logprobTensor.array()) as number[][]
    logprobTensor.dispose()
    responseIds.forEach((id, index) => {
      total -= logprobs[promptIds.length - 1 + index]![id]!
      count++
    })
  }
  return {
    loss: total / count,
    logits: await lastLogits(current.model, current.tokenizer.encode(examples[0]!.prompt, { addSpecialTokens: false })),
    backend: backend ?? 'unknown',
  }
}

/** Drops the model; a training loop in flight stops after its step and disposes its model itself. */
function reset(): void {
  generation++
  stopping.abort()
  stopping = new AbortController()
  paused = false
  warmUpStep = 0
  if (training === undefined) session?.dispose()
  session = undefined
  phase = 'idle'
}

function fail(error: unknown): void {
  phase = 'error'
  status(error instanceof Error ? error.message : String(error))
}

async function runQueued(): Promise<void> {
  const envelope = queue.shift()
  if (envelope === undefined) return
  const { id, request } = envelope
  try {
    const value = await answer(request)
    post({ kind: 'answer', id, value }, transferables(value))
  } catch (error) {
    post({ kind: 'failure', id, message: error instanceof Error ? error.message : String(error), name: error instanceof Error ? error.name : 'Error' })
  }
}

/** The model's bytes travel, not a copy. */
function transferables(value: AnswerValue): Transferable[] {
  if (typeof value !== 'object' || value === null) return []
  return Object.values(value).flatMap((entry) => (entry instanceof Uint8Array ? [entry.buffer as ArrayBuffer] : []))
}

self.onmessage = (message: MessageEvent<Envelope>) => {
  const { id, request } = message.data
  // Pause and resume act at once (the step in flight finishes); the rest queue, and run now unless a step is in
  // flight (the training loop runs them between steps).
  if (request.kind === 'pause' || request.kind === 'resume') {
    paused = request.kind === 'pause'
    if (paused && phase === 'training') phase = 'paused'
    if (!paused && phase === 'paused') phase = 'training'
    status()
    post({ kind: 'answer', id, value: { ok: true } })
    return
  }
  queue.push(message.data)
  if ((phase !== 'training' && phase !== 'warming-up') || request.kind === 'reset' || request.kind === 'start' || request.kind === 'load') void drain()
}

/** Runs the queued requests one at a time; a second caller waits for the same run. */
function drain(): Promise<void> {
  if (draining !== undefined) return draining
  if (queue.length === 0) return Promise.resolve()
  const run = (async () => {
    while (queue.length > 0) await runQueued()
  })()
  draining = run.finally(() => {
    draining = undefined
  })
  return draining
}
