/**
 * The trainer's side of a disaggregated source's collection thread (`disaggregated-worker.ts`): starts it, tells it
 * which steps the trainer asked for and which adapters to load, and hears back the batches it played. The episodes,
 * their HTTP requests and the adapters' load and unload calls run there, off the trainer's thread, whose update
 * computations (synchronous kernels) would otherwise hold them back until they end.
 */
import { Worker } from 'node:worker_threads'
import { LudicError } from '@ludic/core'
import {
  builtModulePath,
  deserializeError,
  deserializeFailures,
  withoutSourceCondition,
  type SerializedBatch,
  type SerializedError,
} from '@ludic/rollout/worker'
import type { DisaggregatedPlan, PlayedBatch } from './disaggregated-play.js'
import { LoraPublishError, type LoraAdapterLoaderSettings, type LoraPublishFailure, type SavedLoraAdapter } from './lora-adapter-loader.js'

/** The thread's start data (structured-cloned). */
export interface DisaggregatedThreadStart {
  setupModule: string
  setupData: unknown
  /** The trainer tokenizer's vocabulary size, checked against the setup's. */
  vocabSize: number
  plan: DisaggregatedPlan
  /** The adapters' loading (no `fetch`: it cannot cross). */
  loader: Omit<LoraAdapterLoaderSettings, 'fetch'>
}

export type DisaggregatedThreadMessage =
  | { type: 'start'; first: number }
  | { type: 'request'; stepIndex: number }
  | { type: 'load'; adapter: SavedLoraAdapter }
  | { type: 'stop' }

export type DisaggregatedThreadReply =
  | { type: 'ready' }
  | { type: 'loaded'; version: number; unloadFailures: LoraPublishFailure[] }
  | ({ type: 'played' } & SerializedBatch)
  | { type: 'error'; stage: 'setup' | 'load' | 'play'; error: SerializedError; publish?: LoraPublishFailure }

export interface DisaggregatedThreadEvents {
  /** A batch the thread played (in order). */
  played(batchIndex: number, played: PlayedBatch): void
  /** The thread failed (an adapter that would not load, a batch that failed, the thread gone): the run stops. */
  failed(error: Error): void
}

export interface DisaggregatedThread {
  /** Plays batch after batch from `first`, each once the trainer asked for the one before and its adapter is loaded. */
  start(first: number): void
  /** The trainer asked for the batch of `stepIndex`. */
  request(stepIndex: number): void
  /** Loads a saved adapter on every endpoint, after the ones sent before it; resolves once it is loaded everywhere. */
  load(adapter: SavedLoraAdapter): Promise<{ unloadFailures: LoraPublishError[] }>
  /** Aborts the batch in flight and stops the thread (the loads sent are finished first by the caller). */
  close(): Promise<void>
}

/** Starts the collection thread; resolves once it has loaded the setup module (rejects with its error if not). */
export function startDisaggregatedThread(
  start: DisaggregatedThreadStart,
  execArgv: readonly string[] | undefined,
  events: DisaggregatedThreadEvents,
): Promise<DisaggregatedThread> {
  const thread = new Worker(builtModulePath(import.meta.url, 'disaggregated-worker', '@ludic/trainer'), {
    workerData: start,
    execArgv: [...(execArgv ?? withoutSourceCondition(process.execArgv))],
  })
  const loads: { version: number; resolve: (value: { unloadFailures: LoraPublishError[] }) => void; reject: (error: Error) => void }[] = []
  let failed: Error | undefined
  let exited = false
  const fail = (error: Error) => {
    if (failed !== undefined) return
    failed = error
    for (const load of loads.splice(0)) load.reject(error)
    events.failed(error)
  }
  const post = (message: DisaggregatedThreadMessage) => {
    if (!exited) thread.postMessage(message)
  }
  return new Promise((resolve, reject) => {
    thread.on('message', (reply: DisaggregatedThreadReply) => {
      switch (reply.type) {
        case 'ready':
          return resolve(handle)
        case 'error': {
          const error = reply.publish === undefined ? deserializeError(reply.error) : new LoraPublishError(reply.publish)
          if (reply.stage === 'setup') {
            reject(error)
            void thread.terminate()
            return
          }
          return fail(error)
        }
        case 'loaded': {
          const index = loads.findIndex((load) => load.version === reply.version)
          if (index >= 0) loads.splice(index, 1)[0]!.resolve({ unloadFailures: reply.unloadFailures.map((failure) => new LoraPublishError(failure)) })
          return
        }
        case 'played':
          return events.played(reply.batchIndex, {
            result: {
              trajectories: reply.trajectories,
              samples: reply.samples,
              failures: deserializeFailures(reply.failures),
            },
            version: reply.version,
            seconds: reply.seconds,
          })
      }
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
      start: (first) => post({ type: 'start', first }),
      request: (stepIndex) => post({ type: 'request', stepIndex }),
      load(adapter) {
        if (failed !== undefined) return Promise.reject(failed)
        return new Promise((resolveLoad, rejectLoad) => {
          loads.push({ version: adapter.version, resolve: resolveLoad, reject: rejectLoad })
          post({ type: 'load', adapter })
        })
      },
      async close() {
        if (exited) return
        failed ??= new LudicError('the rollout source closed') // the exit that follows is no failure
        const gone = new Promise<void>((resolveExit) => thread.once('exit', () => resolveExit()))
        post({ type: 'stop' })
        // The thread ends by itself once its port closes; terminate it if a request keeps it alive.
        const timer = setTimeout(() => void thread.terminate(), 2000)
        await gone
        clearTimeout(timer)
      },
    }
  })
}
