import { LudicError, parseArgument, type Completion, type GenerateOptions, type GenerationRequest, type PolicyV1 } from '@ludic/core'
import { attachLoraAdapter, readLoraAdapter, type CausalLanguageModel, type LocalPolicy, type LoraAdapters, type StoredLoraAdapter } from '@ludic/model'
import type { LoraAdapterLoader } from '@ludic/rollout'
import { z } from 'zod'

export const localLoraAdaptersOptionsSchema = z.strictObject({
  /**
   * The directories adapters may be loaded from (`ludic serve --lora-root`): a client's `lora_path` must resolve, its
   * symbolic links followed, inside one of them (a relative one is taken from the first); anything else is refused
   * without saying whether something is there. Required: runtime loading reads files a client names.
   */
  roots: z.array(z.string().min(1)).min(1),
  /** A load (reading and checking both files) taking longer than this many ms is refused. Default: 60 000. */
  loadTimeoutMs: z.number().int().positive().default(60_000),
  /** Largest `adapter_config.json`, in bytes. Default: 1 MiB. */
  maxConfigBytes: z
    .number()
    .int()
    .positive()
    .default(1 << 20),
  /** The budget of the model's and one adapter's parameters together (see `applyLora`). Default: `applyLora`'s. */
  maxParameterBytes: z.number().positive().optional(),
  /**
   * Generations for the adapter the model holds (or the base) run at once, as concurrent `generate` calls of the
   * generating policy, which must batch them itself: a policy on a `GenerationEngine` (`createLocalPolicy({ engine })`)
   * runs them together. false: one generation at a time (a policy that batches each call's requests, run to its end).
   * Default: true when `generating` runs on an engine (its `engineStats()` is defined), else false.
   */
  concurrent: z.boolean().optional(),
})
export type LocalLoraAdaptersOptions = z.input<typeof localLoraAdaptersOptionsSchema>

/** A `LoraAdapterLoader` over one local model, and the base policy wrapped to take its turn with the adapters. */
export interface LocalLoraAdapters {
  loader: LoraAdapterLoader
  /**
   * The base model's policy: generates with no adapter attached. It reports the generating policy's figures for a
   * server's `/metrics` when that policy has them (`metrics`, e.g. its engine's), requests waiting for their adapter's
   * turn counted among `waitingRequests`.
   */
  base: PolicyV1
  /** Adapters held in memory now. */
  readonly count: number
  /** The adapter attached to the model now, as `<name>#<load number>` (undefined: none). */
  readonly attached: string | undefined
  /** Generations (`generate` calls) running now, all for `attached` (or the base), and waiting for their turn. */
  turns(): { running: number; waiting: number; swaps: number }
  /** Detaches the attached adapter and forgets every one (after the server closed). */
  dispose(): void
}

/** Whose turn a generation waits for: an adapter's key, the base's (undefined), or a symbol of its own (an unload). */
type TurnKey = string | undefined | symbol

interface Turn {
  key: TurnKey
  /** Generation requests in it (for `waitingRequests`); 0 for an unload. */
  requests: number
  work: () => Promise<unknown> | unknown
  resolve: (value: unknown) => void
  reject: (reason: unknown) => void
  signal: AbortSignal | undefined
  onAbort: (() => void) | undefined
}

/**
 * LoRA adapters for a local model (`ludic serve --enable-lora --lora-root <dir>`): many adapters over one set of base
 * weights. `load` reads a PEFT adapter (`readLoraAdapter` of `@ludic/model`: confined to `roots`, regular files only,
 * bounded in size and time, every file checked) and keeps its weights in memory, without waiting for generations: files
 * are read while the model generates, and a slow or hostile file holds up nothing but its own load.
 *
 * Generations take turns by adapter. The generations of one adapter (or of the base) form a group that runs while no
 * other does, its adapter attached to the model first when another is (a swap: one detach and one attach, the adapter's
 * weights copied in), so no generation sees half-loaded or mixed weights. With `concurrent` (a policy on a generation
 * engine) a group's generations run at once and batch there; without it one at a time, in arrival order. Groups go
 * first come first served: a generation for the held adapter joins the running group only while no generation for
 * another one waits; once one does, newer ones queue behind it, and when the running group ends the next group is every
 * waiting generation for the adapter of the oldest waiting one. So no side starves: a generation waits at most for the
 * groups whose oldest generation came before it. An aborted `signal` takes a waiting generation out of the queue
 * (rejecting with its reason). An engine sees the weights change between groups (it checks the model's parameters and
 * adapters every iteration) and drops the prefixes it kept; no generation of the old adapter runs then, so none is
 * recomputed. `generating` is the policy every adapter generates with (the adapter is in the model).
 */
export function createLocalLoraAdapters(model: CausalLanguageModel, generating: PolicyV1, options: LocalLoraAdaptersOptions): LocalLoraAdapters {
  const { roots, loadTimeoutMs, maxConfigBytes, maxParameterBytes, concurrent } = parseArgument(localLoraAdaptersOptionsSchema, options, 'options')
  const engineStats = (generating as Partial<LocalPolicy>).engineStats
  /** Generations of one group running at once. */
  const limit = (concurrent ?? (typeof engineStats === 'function' && engineStats.call(generating) !== undefined)) ? Number.POSITIVE_INFINITY : 1
  /** By load: a name loaded again in place is a new entry, and the old one is freed on its own `unload`. */
  const stored = new Map<string, StoredLoraAdapter>()
  const keys = new WeakMap<PolicyV1, string>()
  let loads = 0
  let swaps = 0
  let attached: { name: string; adapters: LoraAdapters } | undefined
  /** The group running now: its key and how many of its turns run (0: none; `key` is then the last group's). */
  const running: { key: TurnKey; count: number } = { key: undefined, count: 0 }
  const waiting: Turn[] = []
  const begin = (turn: Turn) => {
    if (turn.onAbort !== undefined) turn.signal?.removeEventListener('abort', turn.onAbort)
    running.key = turn.key
    running.count++
    const finish = () => {
      running.count--
      if (running.count === 0) next()
    }
    Promise.resolve()
      .then(turn.work)
      .then(
        (value) => {
          finish()
          turn.resolve(value)
        },
        (error: unknown) => {
          finish()
          turn.reject(error)
        },
      )
  }
  /**
   * Starts what may run now: when no group runs, the next group (every waiting turn for the oldest one's key, up to the
   * limit); while one runs, the waiting turns for its key at the head of the queue (none once another key waits first).
   */
  const next = () => {
    const forming = running.count === 0
    if (forming && waiting.length > 0) running.key = waiting[0]!.key
    for (let index = 0; index < waiting.length && running.count < limit; ) {
      const turn = waiting[index]!
      if (turn.key === running.key) {
        waiting.splice(index, 1)
        begin(turn)
      } else if (forming) index++
      else return
    }
  }
  /** Runs `work` in `key`'s turn (see above); `signal` takes it out of the queue while it waits. */
  const inTurn = <T>(key: TurnKey, requests: number, work: () => Promise<T> | T, signal?: AbortSignal): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason)
        return
      }
      const turn: Turn = { key, requests, work, resolve: resolve as (value: unknown) => void, reject, signal, onAbort: undefined }
      if (signal !== undefined) {
        turn.onAbort = () => {
          const index = waiting.indexOf(turn)
          if (index < 0) return
          waiting.splice(index, 1)
          reject(signal.reason)
          next() // the running group may take more now
        }
        signal.addEventListener('abort', turn.onAbort, { once: true })
      }
      waiting.push(turn)
      next()
    })
  const detach = () => {
    attached?.adapters.remove()
    attached = undefined
  }
  /** The model with the adapter of `key` (none for undefined); called at the start of its group's turn. */
  const ensure = (key: string | undefined) => {
    if (attached?.name === key) return
    detach()
    if (key !== undefined) {
      const adapter = stored.get(key)
      if (adapter === undefined) throw new LudicError(`LoRA adapter '${key}' is not loaded`)
      attached = { name: key, adapters: attachLoraAdapter(model, adapter) }
    }
    swaps++
  }
  const policyFor = (key: string | undefined, id: string): PolicyV1 => {
    const policy: PolicyV1 = {
      specificationVersion: 'v1',
      id,
      generate: (requests: readonly GenerationRequest[], options?: GenerateOptions): Promise<Completion[]> =>
        inTurn(
          key,
          Array.isArray(requests) ? requests.length : 0,
          () => {
            ensure(key)
            return generating.generate(requests, options)
          },
          options?.signal,
        ),
    }
    if (key !== undefined) keys.set(policy, key)
    return policy
  }
  const turnWaitingRequests = () => waiting.reduce((sum, turn) => sum + turn.requests, 0)
  const metrics = (generating as { metrics?: unknown }).metrics
  const base: PolicyV1 & { metrics?: () => Record<string, number> } = {
    ...policyFor(undefined, generating.id),
    // The generating policy's figures for /metrics, and the generations waiting for their adapter's turn.
    ...(typeof metrics === 'function'
      ? {
          metrics: () => {
            const figures = (metrics as () => Record<string, number>).call(generating)
            return { ...figures, waitingRequests: (figures.waitingRequests ?? 0) + turnWaitingRequests(), loraSwaps: swaps }
          },
        }
      : {}),
  }
  const loader: LoraAdapterLoader = {
    async load({ name, path, signal }) {
      // Read and checked outside the turns (no model weights change here); bounded in time as well as in size.
      const deadline = AbortSignal.timeout(loadTimeoutMs)
      const adapter = await readLoraAdapter(model, path, {
        roots,
        maxConfigBytes,
        freezeBase: false,
        signal: AbortSignal.any([signal, deadline]),
        ...(maxParameterBytes === undefined ? {} : { maxParameterBytes }),
      }).catch((error: unknown) => {
        if (deadline.aborted) throw new LudicError(`reading the adapter took longer than ${loadTimeoutMs} ms (the loadTimeoutMs option)`, { cause: error })
        throw error
      })
      const key = `${name}#${++loads}`
      stored.set(key, adapter)
      return policyFor(key, name)
    },
    // A turn of its own: it waits for the generations before it, and none runs while it detaches.
    unload: (_name, policy) =>
      inTurn(Symbol('unload'), 0, () => {
        const key = keys.get(policy)
        if (key === undefined) return
        if (attached?.name === key) detach()
        stored.delete(key)
      }),
  }
  return {
    loader,
    base,
    get count() {
      return stored.size
    },
    get attached() {
      return attached?.name
    },
    turns: () => ({ running: running.count, waiting: waiting.length, swaps }),
    dispose() {
      detach()
      stored.clear()
    },
  }
}
