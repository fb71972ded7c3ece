import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import type { SamplingHelper } from '../platform.js'
import { drawIndex, drawPlain, samplingHelperFloats } from './sampling.js'

/**
 * The process's sampling helper (Node): one worker thread that draws a share of a step's plain rows (`sampleTokens`)
 * while the calling thread draws the rest — the weights of a large vocabulary, one `Math.exp` a token, are most of a
 * large batch's sampling, and the second core is idle then. It runs `drawPlain`'s own source on a shared buffer, so
 * a row's token is the same whichever thread drew it. Started on first use (unreferenced: it never keeps a process
 * alive), used once it says it is ready; a helper that fails, does not take its buffer within `readyMs` or does not
 * answer a step within `answerMs` is dropped for the process and its rows drawn by the caller (the same results). A
 * source transform that makes `drawPlain` call outside itself (coverage instrumentation) makes the thread fail: one
 * step waits `answerMs`, then the caller draws alone.
 */

/** Int32 slots at the start of the buffer. */
const slot = { posted: 0, done: 1, rows: 2, vocab: 3, release: 4, ready: 5 } as const
const controlBytes = 32
const answerMs = 2000
/** How long a handed-over buffer may wait for the thread to take it (it draws nothing meanwhile: no stall). */
const readyMs = 10_000

const workerSource = `
const { parentPort } = require('node:worker_threads')
${drawIndex.toString()}
const drawPlain = ${drawPlain.toString()}
parentPort.on('message', ({ buffer, rowCapacity, logitCapacity }) => {
  const control = new Int32Array(buffer, 0, 8)
  const parameters = new Float64Array(buffer, ${controlBytes}, 2 * rowCapacity)
  const results = new Float64Array(buffer, ${controlBytes} + 16 * rowCapacity, 3 * rowCapacity)
  const logits = new Float32Array(buffer, ${controlBytes} + 40 * rowCapacity, logitCapacity)
  let weights = new Float64Array(0)
  const result = new Float64Array(3)
  let seen = Atomics.load(control, ${slot.posted})
  Atomics.store(control, ${slot.ready}, 1)
  for (;;) {
    // Left for a new buffer (checked first: the release may have come before this buffer's first job).
    if (Atomics.load(control, ${slot.release}) === 1) break
    let posted = Atomics.load(control, ${slot.posted})
    for (let spin = 0; posted === seen && spin < 20000; spin++) posted = Atomics.load(control, ${slot.posted})
    if (posted === seen) {
      Atomics.wait(control, ${slot.posted}, seen)
      continue
    }
    if (Atomics.load(control, ${slot.release}) === 1) break
    seen = posted
    const rows = control[${slot.rows}]
    const vocab = control[${slot.vocab}]
    if (weights.length < vocab) weights = new Float64Array(vocab)
    for (let row = 0; row < rows; row++) {
      drawPlain(logits.subarray(row * vocab, (row + 1) * vocab), parameters[2 * row], parameters[2 * row + 1], weights, result)
      results[3 * row] = result[0]
      results[3 * row + 1] = result[1]
      results[3 * row + 2] = result[2]
    }
    Atomics.store(control, ${slot.done}, posted)
    Atomics.notify(control, ${slot.done})
  }
})
`

interface Shared {
  control: Int32Array
  parameters: Float64Array
  results: Float64Array
  logits: Float32Array
  rowCapacity: number
}

let worker: Worker | undefined
let shared: Shared | undefined
/** Rows the helper thread drew so far (tests). */
let helperRows = 0
let generation = 0
/** When the current buffer was handed over (the worker says it is ready within `readyMs` or is dropped). */
let sharedAt = 0
let broken = availableParallelism() < 2

function drop(): void {
  broken = true
  void worker?.terminate()
  worker = undefined
  shared = undefined
}

/** A buffer for `rows` rows of `vocab` logits, handed to the worker (which leaves the old one first). */
function share(rows: number, vocab: number): void {
  const rowCapacity = 2 ** Math.ceil(Math.log2(Math.max(64, rows)))
  // Room for this step's rows, or twice the last buffer's (fewer new buffers as steps grow), within the bound `draw`
  // keeps each step to (`samplingHelperFloats`).
  const logitCapacity = Math.min(samplingHelperFloats, Math.max(rows * vocab, 2 * (shared?.logits.length ?? 0)))
  const buffer = new SharedArrayBuffer(controlBytes + 40 * rowCapacity + 4 * logitCapacity)
  if (shared !== undefined) {
    Atomics.store(shared.control, slot.release, 1)
    Atomics.add(shared.control, slot.posted, 1)
    Atomics.notify(shared.control, slot.posted)
  }
  shared = {
    control: new Int32Array(buffer, 0, 8),
    parameters: new Float64Array(buffer, controlBytes, 2 * rowCapacity),
    results: new Float64Array(buffer, controlBytes + 16 * rowCapacity, 3 * rowCapacity),
    logits: new Float32Array(buffer, controlBytes + 40 * rowCapacity, logitCapacity),
    rowCapacity,
  }
  generation = 0
  sharedAt = performance.now()
  worker!.postMessage({ buffer, rowCapacity, logitCapacity })
}

const helper: SamplingHelper = {
  draw(logits, vocab, rows, mine) {
    if (broken || worker === undefined || rows.length * vocab > samplingHelperFloats) return undefined
    if (shared === undefined || rows.length > shared.rowCapacity || rows.length * vocab > shared.logits.length) {
      share(rows.length, vocab)
      return undefined // drawn here this time; the helper takes the new buffer meanwhile
    }
    const { control, parameters, results } = shared
    if (Atomics.load(control, slot.ready) !== 1) {
      if (performance.now() - sharedAt > readyMs) drop() // never took the buffer (its thread failed to start or hangs)
      return undefined
    }
    rows.forEach((row, index) => {
      shared!.logits.set(logits.subarray(row.offset, row.offset + vocab), index * vocab)
      parameters[2 * index] = row.temperature
      parameters[2 * index + 1] = row.uniform
    })
    control[slot.rows] = rows.length
    control[slot.vocab] = vocab
    generation = (generation + 1) | 0
    Atomics.store(control, slot.posted, generation)
    Atomics.notify(control, slot.posted)
    mine()
    const deadline = performance.now() + answerMs
    for (let spin = 0; Atomics.load(control, slot.done) !== generation; spin++) {
      if (spin < 20_000) continue
      if (performance.now() > deadline) {
        drop()
        return undefined
      }
      Atomics.wait(control, slot.done, Atomics.load(control, slot.done), 10)
    }
    helperRows += rows.length
    return results.slice(0, 3 * rows.length)
  },
}

/** The helper once its thread runs (starting it on the first call), or undefined (starting, failed, or one core). */
export function samplingHelper(): SamplingHelper | undefined {
  if (broken) return undefined
  if (worker === undefined) {
    try {
      worker = new Worker(workerSource, { eval: true })
      worker.unref()
      worker.on('error', drop)
      worker.on('exit', () => {
        if (worker !== undefined) drop()
      })
    } catch {
      drop()
    }
    return undefined
  }
  return helper
}

/** Rows the helper thread drew in this process so far. */
export function samplingHelperRows(): number {
  return helperRows
}
