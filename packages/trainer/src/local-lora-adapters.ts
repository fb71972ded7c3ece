import { LudicError, type Completion, type GenerateOptions, type GenerationRequest, type PolicyV1 } from '@ludic/core'
import { applyLora, loadLoraAdapter, type CausalLanguageModel, type LoraAdapters, type LoraConfig } from '@ludic/model'
import type { LoraAdapterLoader } from '@ludic/rollout'
import * as tf from '@tensorflow/tfjs-core'

/** An adapter read from disk: its configuration and its weights by parameter name (with their shapes). */
interface StoredAdapter {
  config: LoraConfig
  weights: Map<string, { shape: number[]; values: Float32Array }>
}

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
 * LoRA adapters for a local model (`ludic serve --enable-lora`): many adapters over one set of base weights. `load` reads a PEFT adapter
 * (`loadLoraAdapter` of `@ludic/model`: every file checked before the model is touched) and keeps its weights in
 * memory; each adapter's policy, and the base's, generates under one lock, attaching its adapter first when another
 * is attached (a swap between generations: adapters are swapped only while no generation runs, so no request sees
 * half-loaded or mixed weights). Requests to the adapter the model holds cost nothing extra; a swap costs one
 * detach and one attach (the adapter's weights copied in). `policyOf` makes the generating policy (the same local
 * policy for every adapter: the adapter is in the model).
 */
export function createLocalLoraAdapters(model: CausalLanguageModel, generating: PolicyV1): LocalLoraAdapters {
  /** By load: a name loaded again in place is a new entry, and the old one is freed on its own `unload`. */
  const stored = new Map<string, StoredAdapter>()
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
    const adapters = applyLora(model, { ...adapter.config, freezeBase: false })
    try {
      for (const [parameter, variable] of adapters.parameters()) {
        const weight = adapter.weights.get(parameter)
        if (weight === undefined) throw new LudicError(`LoRA adapter '${key}' has no weight ${parameter}`)
        tf.tidy(() => variable.assign(tf.tensor(weight.values, weight.shape)))
      }
    } catch (error) {
      adapters.remove()
      throw error
    }
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
    load: ({ name, path }) =>
      exclusive(async () => {
        detach() // loadLoraAdapter attaches to a model without adapters
        const adapters = await loadLoraAdapter(model, path, { freezeBase: false })
        const weights = new Map<string, { shape: number[]; values: Float32Array }>()
        for (const [parameter, variable] of adapters.parameters())
          weights.set(parameter, { shape: [...variable.shape], values: variable.dataSync() as Float32Array })
        const key = `${name}#${++loads}`
        stored.set(key, { config: adapters.config, weights })
        attached = { name: key, adapters }
        return policyFor(key, name)
      }),
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
