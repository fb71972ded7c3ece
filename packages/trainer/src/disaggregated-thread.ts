/**
 * The trainer's side of a disaggregated source's collection thread (`disaggregated-worker.ts`): starts it, asks it for
 * one batch at a time, and stops it. Episodes, environments and HTTP requests run there, off the trainer's thread,
 * whose update computations (synchronous kernels) would otherwise hold every episode back until they end.
 */
import { Worker } from 'node:worker_threads'
import { LudicError, type Sample, type Trajectory } from '@ludic/core'
import type { CollectResult } from '@ludic/rollout'
import { builtModulePath, deserializeError, withoutSourceCondition, type SerializedError, type SerializedFailure } from '@ludic/rollout/worker'
import type { DisaggregatedPlan, PlayedAdapter } from './disaggregated-play.js'

/** The thread's start data (structured-cloned). */
export interface DisaggregatedThreadStart {
  setupModule: string
  setupData: unknown
  /** The trainer tokenizer's vocabulary size, checked against the setup's. */
  vocabSize: number
  plan: DisaggregatedPlan
}

export type DisaggregatedThreadMessage = { type: 'play'; batchIndex: number; adapter: PlayedAdapter } | { type: 'stop' }

export type DisaggregatedThreadReply =
  | { type: 'ready' }
  | { type: 'played'; batchIndex: number; seconds: number; trajectories: Trajectory[]; samples: Sample[]; failures: SerializedFailure[] }
  | { type: 'error'; batchIndex?: number; error: SerializedError }

export interface DisaggregatedThread {
  /** Plays batch `batchIndex` with `adapter` in the thread; rejects when `signal` aborts or the thread fails. */
  play(batchIndex: number, adapter: PlayedAdapter, signal: AbortSignal): Promise<{ result: CollectResult; seconds: number }>
  /** Aborts the batch in flight and stops the thread. */
  close(): Promise<void>
}

/** Starts the collection thread; resolves once it has loaded the setup module (rejects with its error if not). */
export function startDisaggregatedThread(start: DisaggregatedThreadStart, execArgv: readonly string[] | undefined): Promise<DisaggregatedThread> {
  const thread = new Worker(builtModulePath(import.meta.url, 'disaggregated-worker', '@ludic/trainer'), {
    workerData: start,
    execArgv: [...(execArgv ?? withoutSourceCondition(process.execArgv))],
  })
  let pending: { batchIndex: number; resolve: (value: { result: CollectResult; seconds: number }) => void; reject: (error: unknown) => void } | undefined
  let failed: Error | undefined
  let exited = false
  const fail = (error: Error) => {
    failed ??= error
    pending?.reject(error)
    pending = undefined
  }
  return new Promise((resolve, reject) => {
    thread.on('message', (reply: DisaggregatedThreadReply) => {
      if (reply.type === 'ready') return resolve(handle)
      if (reply.type === 'error') {
        const error = deserializeError(reply.error)
        if (reply.batchIndex === undefined) {
          reject(error) // the setup failed
          void thread.terminate()
        }
        return fail(error)
      }
      if (pending === undefined || pending.batchIndex !== reply.batchIndex) return
      const { resolve: done } = pending
      pending = undefined
      done({
        result: {
          trajectories: reply.trajectories,
          samples: reply.samples,
          failures: reply.failures.map((failure) => ({ ...failure, error: deserializeError(failure.error) })),
        },
        seconds: reply.seconds,
      })
    })
    thread.on('error', (error) => {
      reject(error)
      fail(error)
    })
    thread.on('exit', (code) => {
      exited = true
      const error = new LudicError(`the disaggregated source's collection thread exited (code ${code})`)
      reject(error)
      fail(error)
    })
    const handle: DisaggregatedThread = {
      play(batchIndex, adapter, signal) {
        if (failed !== undefined) return Promise.reject(failed)
        if (pending !== undefined) return Promise.reject(new LudicError(`batch ${pending.batchIndex} is still being played`))
        return new Promise((resolvePlay, rejectPlay) => {
          signal.throwIfAborted()
          const onAbort = () => {
            if (pending?.batchIndex !== batchIndex) return
            pending = undefined
            rejectPlay(signal.reason)
          }
          signal.addEventListener('abort', onAbort, { once: true })
          pending = {
            batchIndex,
            resolve: (value) => {
              signal.removeEventListener('abort', onAbort)
              resolvePlay(value)
            },
            reject: (error) => {
              signal.removeEventListener('abort', onAbort)
              rejectPlay(error)
            },
          }
          thread.postMessage({ type: 'play', batchIndex, adapter } satisfies DisaggregatedThreadMessage)
        })
      },
      async close() {
        if (exited) return
        const gone = new Promise<void>((resolveExit) => thread.once('exit', () => resolveExit()))
        thread.postMessage({ type: 'stop' } satisfies DisaggregatedThreadMessage)
        // The thread ends by itself once its port closes; terminate it if a request keeps it alive.
        const timer = setTimeout(() => void thread.terminate(), 2000)
        await gone
        clearTimeout(timer)
      },
    }
  })
}
