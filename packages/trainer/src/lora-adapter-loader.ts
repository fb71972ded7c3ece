/**
 * The loading half of publishing LoRA adapters (no TensorFlow.js here, so that a disaggregated source's collection
 * thread can run it): vLLM's runtime adapter API on every endpoint, the newest versions kept loaded, the older ones
 * unloaded and their folders deleted. `createLoraAdapterPublisher` adds the saving half.
 */
import { rm } from 'node:fs/promises'
import { LudicError } from '@ludic/core'

const marker = Symbol.for('ludic.error.LoraPublishError')

/** What a `LoraPublishError` is made of (plain data: it crosses to and from a collection thread as it is). */
export interface LoraPublishFailure {
  /** The endpoint's base URL, as given in `endpoints`. */
  endpoint: string
  operation: 'load' | 'unload'
  adapter: string
  /** The HTTP status (undefined: no answer — connection refused, timeout). */
  status?: number | undefined
  /** The server's message, or why there was no answer. */
  detail: string
}

/** An endpoint refused (or never answered) a LoRA adapter load or unload. */
export class LoraPublishError extends LudicError {
  private readonly [marker] = true
  override readonly name = 'LoraPublishError'
  readonly endpoint: string
  readonly operation: 'load' | 'unload'
  readonly adapter: string
  readonly status: number | undefined
  readonly detail: string

  constructor(options: LoraPublishFailure & { cause?: unknown }) {
    const status = options.status === undefined ? 'no answer' : `HTTP ${options.status}`
    super(`${options.endpoint} refused to ${options.operation} LoRA adapter '${options.adapter}' (${status}): ${options.detail}`, { cause: options.cause })
    this.endpoint = options.endpoint
    this.operation = options.operation
    this.adapter = options.adapter
    this.status = options.status
    this.detail = options.detail
  }

  /** The plain data it was made of. */
  toFailure(): LoraPublishFailure {
    return { endpoint: this.endpoint, operation: this.operation, adapter: this.adapter, status: this.status, detail: this.detail }
  }

  static override isInstance(value: unknown): value is LoraPublishError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true
  }
}

/** An adapter version written to disk (and, once pushed, loaded on every endpoint under `name`). */
export interface SavedLoraAdapter {
  name: string
  version: number
  /** Absolute folder. */
  path: string
}

/** The loader's settings (the publisher's options, parsed; structured-cloneable but for `fetch`). */
export interface LoraAdapterLoaderSettings {
  endpoints: string[]
  apiKey?: string | undefined
  keepLoaded: number
  keepLast: number
  timeoutMs: number
  fetch?: typeof globalThis.fetch | undefined
}

export interface LoraAdapterLoader {
  /** See `LoraAdapterPublisher.push`. */
  push(saved: SavedLoraAdapter, signal?: AbortSignal): Promise<void>
  readonly current: SavedLoraAdapter | undefined
  readonly unloadFailures: readonly LoraPublishError[]
}

export function createLoraAdapterLoader(settings: LoraAdapterLoaderSettings): LoraAdapterLoader {
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

  return {
    async push(saved, signal) {
      if (!onDisk.some((adapter) => adapter.version === saved.version)) insertByVersion(onDisk, saved)
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
