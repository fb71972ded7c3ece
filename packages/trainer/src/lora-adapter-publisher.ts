import { mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgument } from '@ludic/core'
import { encodeLoraAdapter, type LoraAdapterFiles, type LoraAdapters } from '@ludic/model'
import { z } from 'zod'
import {
  createLoraAdapterLoader,
  type LoraAdapterLoader,
  type LoraAdapterLoaderSettings,
  type LoraPublishError,
  type SavedLoraAdapter,
} from './lora-adapter-loader.js'

export { LoraPublishError, type LoraPublishFailure, type SavedLoraAdapter } from './lora-adapter-loader.js'

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

export interface LoraAdapterPublisher {
  /**
   * Writes the adapters' current weights as version `version` (PEFT files). The weights are read and the files
   * written before it returns (synchronously: an adapter is small, and a trainer's thread busy with its next update
   * would otherwise hold the writing back), so the model may change at once.
   */
  save(adapters: LoraAdapters, version: number): Promise<SavedLoraAdapter>
  /**
   * Loads a saved version on every endpoint (in parallel), makes it `current`, then unloads the versions beyond
   * `keepLoaded` and deletes the folders of pushed versions beyond `keepLast`. A failed load is a `LoraPublishError`
   * naming the endpoint (`current` stays the previous version); unloads that fail are collected in `unloadFailures`,
   * not thrown.
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
  return publisherOf(savingTo(settings), createLoraAdapterLoader(loaderSettings(settings)))
}

/** A publisher made of its two halves: a saving one and a loading one (here, or in a disaggregated source's thread). */
export function publisherOf(save: (adapters: LoraAdapters, version: number) => Promise<SavedLoraAdapter>, loader: LoraAdapterLoader): LoraAdapterPublisher {
  return {
    save,
    push: (saved, signal) => loader.push(saved, signal),
    async publish(adapters, version, signal) {
      const saved = await save(adapters, version)
      await loader.push(saved, signal)
      return saved
    },
    get current() {
      return loader.current
    },
    get unloadFailures() {
      return loader.unloadFailures
    },
  }
}

export type LoraAdapterPublisherSettings = z.output<typeof loraAdapterPublisherOptionsSchema>

/** The loading half's settings. */
export function loaderSettings(settings: LoraAdapterPublisherSettings): LoraAdapterLoaderSettings {
  return {
    endpoints: settings.endpoints,
    apiKey: settings.apiKey,
    keepLoaded: settings.keepLoaded,
    keepLast: settings.keepLast,
    timeoutMs: settings.timeoutMs,
    fetch: settings.fetch,
  }
}

/** The saving half: `<directory>/<prefix>-<version>`, written synchronously. */
export function savingTo(settings: LoraAdapterPublisherSettings): (adapters: LoraAdapters, version: number) => Promise<SavedLoraAdapter> {
  const directory = resolve(settings.directory)
  return async (adapters, version) => {
    const parsedVersion = parseArgument(z.number().int().min(0), version, 'version')
    const name = `${settings.prefix}-${parsedVersion}`
    const saved = { name, version: parsedVersion, path: join(directory, name) }
    writeFolderSync(saved.path, encodeLoraAdapter(adapters, settings.baseModel === undefined ? {} : { baseModel: settings.baseModel }))
    return saved
  }
}

/** Writes each file under a temporary name, then renames it: a server never reads a partial file. */
function writeFolderSync(folder: string, files: LoraAdapterFiles): void {
  mkdirSync(folder, { recursive: true })
  for (const name of ['adapter_model.safetensors', 'adapter_config.json'] as const) {
    const content = files[name]
    const temporary = join(folder, `.${name}.${process.pid}.tmp`)
    writeFileSync(temporary, content)
    renameSync(temporary, join(folder, name))
  }
}
