import { LudicError, parseArgument, type Completion, type GenerateOptions, type GenerationRequest, type PolicyV1 } from '@ludic/core'
import { attachLoraAdapter, readLoraAdapter, type CausalLanguageModel, type LoraAdapters, type StoredLoraAdapter } from '@ludic/model'
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
})
export type LocalLoraAdaptersOptions = z.input<typeof localLoraAdaptersOptionsSchema>

/** A `LoraAdapterLoader` over one local model, and the base policy wrapped to take its turn with the adapters. */
export interface LocalLoraAdapters {
  loader: LoraAdapterLoader
  /** The base model's policy: generates with no adapter attached. */
  base: PolicyV1
  /** Adapters held in memory now. */
  readonly count: number
  /** The adapter attached to the model now, as `<name>#<load number>` (undefined: none). */
  readonly attached: string | undefined
  /** Detaches the attached adapter and forgets every one (after the server closed). */
  dispose(): void
}

/**
 * LoRA adapters for a local model (`ludic serve --enable-lora --lora-root <dir>`): many adapters over one set of base
 * weights. `load` reads a PEFT adapter (`readLoraAdapter` of `@ludic/model`: confined to `roots`, regular files only,
 * bounded in size and time, every file checked) and keeps its weights in memory, without taking the model's lock: files
 * are read while the model generates, and a slow or hostile file holds up nothing but its own load. Each adapter's
 * policy, and the base's, generates under one lock, attaching its adapter first when another is attached (a swap
 * between generations: adapters are swapped only while no generation runs, so no request sees half-loaded or mixed
 * weights). Requests to the adapter the model holds cost nothing extra; a swap costs one detach and one attach (the
 * adapter's weights copied in). `generating` is the policy every adapter generates with (the adapter is in the model).
 */
export function createLocalLoraAdapters(model: CausalLanguageModel, generating: PolicyV1, options: LocalLoraAdaptersOptions): LocalLoraAdapters {
  const { roots, loadTimeoutMs, maxConfigBytes, maxParameterBytes } = parseArgument(localLoraAdaptersOptionsSchema, options, 'options')
  /** By load: a name loaded again in place is a new entry, and the old one is freed on its own `unload`. */
  const stored = new Map<string, StoredLoraAdapter>()
  const keys = new WeakMap<PolicyV1, string>()
  let loads = 0
  let attached: { name: string; adapters: LoraAdapters } | undefined
  let queue: Promise<unknown> = Promise.resolve()
  /** Runs `work` once every earlier one finished (the model's one lock). */
  const exclusive = <T>(work: () => Promise<T> | T): Promise<T> => {
    const run = queue.then(work)
    queue = run.catch(() => {})
    return run
  }
  const detach = () => {
    attached?.adapters.remove()
    attached = undefined
  }
  /** The model with the adapter of `key` (none for undefined); called under the lock. */
  const ensure = (key: string | undefined) => {
    if (attached?.name === key) return
    detach()
    if (key === undefined) return
    const adapter = stored.get(key)
    if (adapter === undefined) throw new LudicError(`LoRA adapter '${key}' is not loaded`)
    const adapters = attachLoraAdapter(model, adapter)
    attached = { name: key, adapters }
  }
  const policyFor = (key: string | undefined, id: string): PolicyV1 => {
    const policy: PolicyV1 = {
      specificationVersion: 'v1',
      id,
      generate: (requests: readonly GenerationRequest[], options?: GenerateOptions): Promise<Completion[]> =>
        exclusive(() => {
          ensure(key)
          return generating.generate(requests, options)
        }),
    }
    if (key !== undefined) keys.set(policy, key)
    return policy
  }
  const loader: LoraAdapterLoader = {
    async load({ name, path, signal }) {
      // Read and checked outside the lock (no model weights change here); bounded in time as well as in size.
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
    unload: (_name, policy) =>
      exclusive(() => {
        const key = keys.get(policy)
        if (key === undefined) return
        if (attached?.name === key) detach()
        stored.delete(key)
      }),
  }
  return {
    loader,
    base: policyFor(undefined, generating.id),
    get count() {
      return stored.size
    },
    get attached() {
      return attached?.name
    },
    dispose() {
      detach()
      stored.clear()
    },
  }
}
