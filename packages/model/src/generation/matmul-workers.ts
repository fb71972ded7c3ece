import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import {
  attendParts,
  attendRows,
  attentionBlock,
  attentionSoftmax,
  pagedScores,
  pagedWeightedSum,
  rmsNormaliseRow,
  rotateAndStoreRow,
} from './attention-rows.js'
import { controlBytes, controlSlots, type MatmulHelpers } from './matmul-control.js'

/**
 * Worker threads that run the SIMD matmul kernel (`simd-matmul.ts`) — and the host decoder's attention
 * (`attention-rows.ts`: a decode step's rows, a prefill's parts, cut into chunks the same way) — on a shared
 * WebAssembly memory beside the calling thread. A product's output rows are cut into chunks (multiples of the kernel's four-row block); every
 * thread — the caller included — claims chunks from one counter in the memory's control block until none is
 * left, and the caller waits until all are done. A chunk's sums are the single-thread kernel's, so the result
 * is bit-for-bit the same however the chunks fall, and a helper that is slow to wake (or never joins) only
 * leaves more chunks to the caller.
 *
 * The workers are kept in a process-wide pool (unreferenced, so they never keep a process alive) and lent to
 * one arena at a time; an arena hands them back with `release`. Between products a helper spins briefly on
 * the counter, then sleeps in `Atomics.wait` until the next product is posted.
 */

/**
 * The helper's loop (CommonJS, evaluated in the worker), with the attention rows' own functions (`attention-rows.ts`,
 * their sources: the same code on both threads). `Atomics.load` spins of about 20–50 µs cover the gaps between the
 * jobs of one decode step; longer gaps sleep.
 */
const workerSource = `
const { parentPort } = require('node:worker_threads')
${rmsNormaliseRow.toString()}
${attentionSoftmax.toString()}
${rotateAndStoreRow.toString()}
${attentionBlock.toString()}
${pagedScores.toString()}
${pagedWeightedSum.toString()}
${attendRows.toString()}
${attendParts.toString()}
const spins = 20000
parentPort.on('message', ({ module, memory, control }) => {
  const { matmul, matmulPacked } = new WebAssembly.Instance(module, { env: { memory } }).exports
  const slots = new Int32Array(memory.buffer, control, ${controlBytes / 4})
  const floats = new Float32Array(memory.buffer)
  const ints = new Int32Array(memory.buffer)
  let seen = -1
  for (;;) {
    let value = Atomics.load(slots, ${controlSlots.next})
    // After a product the step's next product follows at once: spin. After attention the next job is a while off
    // (the backend's products run between them, on both cores): sleep at once.
    const linger = slots[${controlSlots.kind}] === 0 ? spins : 0
    for (let spin = 0; value === seen && spin < linger; spin++) value = Atomics.load(slots, ${controlSlots.next})
    if (value === seen) {
      Atomics.wait(slots, ${controlSlots.next}, seen)
      continue
    }
    if (Atomics.load(slots, ${controlSlots.release}) === 1) break
    const generation = value >>> 8
    for (;;) {
      const current = Atomics.load(slots, ${controlSlots.next})
      if (current >>> 8 !== generation) break
      const chunk = current & 255
      const chunks = Atomics.load(slots, ${controlSlots.chunks})
      if (chunk >= chunks) {
        seen = current
        break
      }
      if (Atomics.compareExchange(slots, ${controlSlots.next}, current, current + 1) !== current) continue
      const a = ${controlSlots.arguments}
      const perChunk = slots[${controlSlots.rowsPerChunk}]
      const from = chunk * perChunk
      const kind = slots[${controlSlots.kind}]
      try {
        if (kind !== 0) (kind === 1 ? attendRows : attendParts)(floats, ints, slots[a], matmul, from, Math.min(slots[a + 1], from + perChunk))
        else {
          const rows = Math.min(perChunk, slots[a + 3] - from)
          ;(slots[${controlSlots.packed}] === 1 ? matmulPacked : matmul)(slots[a] + from * slots[a + 6], slots[a + 1], slots[a + 2] + from * 4, rows, slots[a + 4], slots[a + 5], slots[a + 6], slots[a + 7], slots[a + 8])
        }
      } catch {
        // Counted done all the same (the caller would wait for it for ever); the caller throws for the job.
        Atomics.store(slots, ${controlSlots.failed}, 1)
      }
      Atomics.add(slots, ${controlSlots.done}, 1)
      Atomics.notify(slots, ${controlSlots.done})
    }
  }
})
`

interface PooledWorker {
  worker: Worker
  busy: boolean
}

const pool: PooledWorker[] = []

/** The most helpers a process keeps: one fewer than its CPUs (at least one). */
function poolLimit(): number {
  return Math.max(1, availableParallelism() - 1)
}

function startWorker(): PooledWorker | undefined {
  try {
    const worker = new Worker(workerSource, { eval: true })
    worker.unref()
    const pooled: PooledWorker = { worker, busy: false }
    const drop = () => {
      const index = pool.indexOf(pooled)
      if (index >= 0) pool.splice(index, 1)
    }
    worker.on('error', drop)
    worker.on('exit', drop)
    pool.push(pooled)
    return pooled
  } catch {
    return undefined
  }
}

/**
 * Lends up to `count` helpers (free pool workers, new ones started up to the pool's limit) to the memory
 * whose control block is at byte `control`: each instantiates `module` on `memory` and starts claiming
 * chunks. Fewer (or none) when the pool is busy with other arenas or a worker cannot start.
 */
export function lendMatmulHelpers(count: number, module: object, memory: object, control: number, slots: Int32Array): MatmulHelpers {
  const lent: PooledWorker[] = []
  for (const pooled of pool) {
    if (lent.length >= count) break
    if (!pooled.busy) lent.push(pooled)
  }
  while (lent.length < count && pool.length < poolLimit()) {
    const started = startWorker()
    if (started === undefined) break
    lent.push(started)
  }
  const joined: PooledWorker[] = []
  for (const pooled of lent) {
    try {
      pooled.worker.postMessage({ module, memory, control })
      pooled.busy = true
      joined.push(pooled)
    } catch {
      // a worker that cannot take the memory is left out; the caller's thread does its share
    }
  }
  let released = false
  return {
    count: joined.length,
    release() {
      if (released) return
      released = true
      Atomics.store(slots, controlSlots.release, 1)
      Atomics.store(slots, controlSlots.next, (((Atomics.load(slots, controlSlots.next) >>> 8) + 1) & 0x7fffff) << 8)
      Atomics.notify(slots, controlSlots.next)
      // A worker's port queues the next memory until it has left this one, so it can be lent again at once.
      for (const pooled of joined) pooled.busy = false
    },
  }
}
