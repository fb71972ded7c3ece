import { rm } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { LudicError, parseArgument } from '@ludic/core'
import { saveLoraAdapter, type LoraAdapters } from '@ludic/model'
import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'

const marker = Symbol.for('ludic.error.LoraPublishError')

/** An endpoint refused (or never answered) a LoRA adapter load or unload. */
export class LoraPublishError extends LudicError {
  private readonly [marker] = true
  override readonly name = 'LoraPublishError'
  /** The endpoint's base URL, as given in `endpoints`. */
  readonly endpoint: string
  readonly operation: 'load' | 'unload'
  readonly adapter: string
  /** The HTTP status (undefined: no answer — connection refused, timeout). */
  readonly status: number | undefined

  constructor(options: { endpoint: string; operation: 'load' | 'unload'; adapter: string; status?: number | undefined; detail: string; cause?: unknown }) {
    const status = options.status === undefined ? 'no answer' : `HTTP ${options.status}`
    super(`${options.endpoint} refused to ${options.operation} LoRA adapter '${options.adapter}' (${status}): ${options.detail}`, { cause: options.cause })
    this.endpoint = options.endpoint
    this.operation = options.operation
    this.adapter = options.adapter
    this.status = options.status
  }

  static override isInstance(value: unknown): value is LoraPublishError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true
  }
}

export const loraAdapterPublisherOptionsSchema = z.strictObject({
  /** The servers' base URLs, e.g. `http://127.0.0.1:8000/v1` (vLLM with runtime LoRA updating, or `ludic serve --enable-lora`). */
  endpoints: z
    .array(z.string().refine((url) => URL.canParse(url), 'must be an absolute URL'))
    .min(1)
    .max(256),
  /** Sent as `Authorization: Bearer <apiKey>`. Default: none. */
  apiKey: z.string().min(1).optional(),
  /** Where adapters are written, one folder per version (`<directory>/<prefix>-<version>`); the servers must read the same path. */
  directory: z.string().min(1),
  /** Adapter names are `<prefix>-<version>`. Default: 'step'. */
  prefix: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1–64 letters, digits, dots, dashes or underscores')
    .default('step'),
  /**
   * Adapters left loaded on the servers: the newest and the ones before it, so episodes still playing an older one
   * finish with it; older ones are unloaded. Default: 2 (enough for a staleness bound of 1).
   */
  keepLoaded: z.number().int().min(1).max(64).default(2),
  /** Adapter folders kept on disk (at least `keepLoaded`; older ones are deleted). Default: 3. */
  keepLast: z.number().int().min(1).max(1024).default(3),
  /** Deadline of one load or unload request, in ms. Default: 60 000. */
  timeoutMs: z.number().int().positive().default(60_000),
  /** `base_model_name_or_path` written into `adapter_config.json`. Default: none. */
  baseModel: z.string().min(1).optional(),
  /** A `fetch` implementation (tests, proxies). Default: the global one. */
  fetch: z.custom<typeof fetch>((value) => typeof value === 'function', 'must be a fetch function').optional(),
})
export type LoraAdapterPublisherOptions = z.input<typeof loraAdapterPublisherOptionsSchema>

/** An adapter version written to disk (and, once pushed, loaded on every endpoint under `name`). */
export interface SavedLoraAdapter {
  name: string
  version: number
  /** Absolute folder. */
  path: string
}

export interface LoraAdapterPublisher {
  /**
   * Writes the adapters' current weights as version `version` (PEFT files). The weights are copied when it is called,
   * so the model may change at once, while the files are written.
   */
  save(adapters: LoraAdapters, version: number): Promise<SavedLoraAdapter>
  /**
   * Loads a saved version on every endpoint (in parallel), makes it `current`, then unloads the versions beyond
   * `keepLoaded` and deletes the folders beyond `keepLast`. A failed load is a `LoraPublishError` naming the endpoint
   * (`current` stays the previous version); unloads that fail are collected in `unloadFailures`, not thrown.
   */
  push(saved: SavedLoraAdapter, signal?: AbortSignal): Promise<void>
  /** `save` then `push`. */
  publish(adapters: LoraAdapters, version: number, signal?: AbortSignal): Promise<SavedLoraAdapter>
  /** The newest version loaded everywhere (undefined before the first push). */
  readonly current: SavedLoraAdapter | undefined
  /** Unloads that failed (the adapter then stays loaded on that endpoint). */
  readonly unloadFailures: readonly LoraPublishError[]
}

/**
 * Pushes LoRA adapters to OpenAI-compatible servers through vLLM's runtime adapter API (`POST
 * /v1/load_lora_adapter` `{ lora_name, lora_path }`, `POST /v1/unload_lora_adapter` `{ lora_name }`): after each
 * update the trainer saves the adapter as `<directory>/<prefix>-<version>`, loads it on every endpoint, switches its
 * rollouts to the new name, and the versions older than `keepLoaded` are unloaded (their episodes are done by then).
 * The servers read the folder themselves: they must see the same file system (or a shared volume).
 */
export function createLoraAdapterPublisher(options: LoraAdapterPublisherOptions): LoraAdapterPublisher {
  const settings = parseArgument(loraAdapterPublisherOptionsSchema, options, 'options')
  const directory = resolve(settings.directory)
  const send = settings.fetch ?? globalThis.fetch
  const loaded: SavedLoraAdapter[] = []
  const onDisk: SavedLoraAdapter[] = []
  const unloadFailures: LoraPublishError[] = []
  let current: SavedLoraAdapter | undefined

  const call = async (endpoint: string, operation: 'load' | 'unload', adapter: SavedLoraAdapter, signal: AbortSignal | undefined) => {
    const url = `${endpoint.replace(/\/+$/, '')}/${operation}_lora_adapter`
    const body = operation === 'load' ? { lora_name: adapter.name, lora_path: adapter.path } : { lora_name: adapter.name }
    const deadline = AbortSignal.timeout(settings.timeoutMs)
    let response: Response
    try {
      response = await send(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(settings.apiKey === undefined ? {} : { authorization: `Bearer ${settings.apiKey}` }) },
        body: JSON.stringify(body),
        signal: signal === undefined ? deadline : AbortSignal.any([signal, deadline]),
      })
    } catch (error) {
      signal?.throwIfAborted()
      const detail = deadline.aborted ? `no answer within ${settings.timeoutMs} ms (timeoutMs)` : error instanceof Error ? error.message : String(error)
      throw new LoraPublishError({ endpoint, operation, adapter: adapter.name, detail, cause: error })
    }
    const text = (await response.text().catch(() => '')).slice(0, 2000)
    if (response.ok) return
    let detail = text
    try {
      detail = (JSON.parse(text) as { error?: { message?: string }; message?: string }).error?.message ?? detail
    } catch {
      // a plain-text answer
    }
    throw new LoraPublishError({ endpoint, operation, adapter: adapter.name, status: response.status, detail })
  }

  const save = (adapters: LoraAdapters, version: number): Promise<SavedLoraAdapter> => {
    const parsedVersion = parseArgument(z.number().int().min(0), version, 'version')
    const name = `${settings.prefix}-${parsedVersion}`
    const saved = { name, version: parsedVersion, path: join(directory, name) }
    // Copies of the weights now (small: the adapters only), written while the trainer goes on.
    const copies = new Map([...adapters.parameters()].map(([parameter, variable]) => [parameter, tf.variable(variable, false)]))
    const release = () => tf.dispose([...copies.values()])
    const frozen: LoraAdapters = {
      config: adapters.config,
      layers: adapters.layers,
      scale: adapters.scale,
      merged: false,
      parameters: () => copies,
      merge: () => {},
      unmerge: () => {},
      remove: release,
    }
    return saveLoraAdapter(frozen, saved.path, settings.baseModel === undefined ? {} : { baseModel: settings.baseModel })
      .then(() => {
        // Saves finish in any order (they run in the background); pruning must see them by version.
        insertByVersion(onDisk, saved)
        return saved
      })
      .finally(release)
  }

  const push = async (saved: SavedLoraAdapter, signal?: AbortSignal): Promise<void> => {
    const results = await Promise.allSettled(settings.endpoints.map((endpoint) => call(endpoint, 'load', saved, signal)))
    const failed = results.find((result) => result.status === 'rejected')
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason
    if (current === undefined || saved.version > current.version) current = saved
    insertByVersion(loaded, saved)
    const retired = loaded.splice(0, Math.max(0, loaded.length - settings.keepLoaded))
    for (const old of retired) {
      const unloads = await Promise.allSettled(settings.endpoints.map((endpoint) => call(endpoint, 'unload', old, signal)))
      for (const result of unloads) if (result.status === 'rejected' && LoraPublishError.isInstance(result.reason)) unloadFailures.push(result.reason)
    }
    const keep = Math.max(settings.keepLast, settings.keepLoaded)
    for (const old of onDisk.splice(0, Math.max(0, onDisk.length - keep))) await rm(old.path, { recursive: true, force: true })
  }

  return {
    save,
    push,
    async publish(adapters, version, signal) {
      const saved = await save(adapters, version)
      await push(saved, signal)
      return saved
    },
    get current() {
      return current
    },
    unloadFailures,
  }
}

/** Inserts `adapter` into `list`, which is kept in increasing version order. */
function insertByVersion(list: SavedLoraAdapter[], adapter: SavedLoraAdapter): void {
  let index = list.length
  while (index > 0 && list[index - 1]!.version > adapter.version) index--
  list.splice(index, 0, adapter)
}
