import type { PolicyV1 } from '@ludic/core'
import { z } from 'zod'

/** What a LoRA adapter load asks for: vLLM's `POST /v1/load_lora_adapter` body, checked and bounded. */
export interface LoraAdapterLoadRequest {
  /** The name clients then send as `model`. */
  readonly name: string
  /** Where the adapter lies (for Ludic's own loader: a PEFT directory with `adapter_config.json` and `adapter_model.safetensors`). */
  readonly path: string
  /** Aborted when the server closes. */
  readonly signal: AbortSignal
}

/**
 * Turns an adapter on disk into a policy that generates with it — injected into `serveOpenAICompatible`, so this
 * package never touches weights (`ludic serve` gives one over a local model's LoRA files). `load` must read and
 * check everything before it returns: the server routes requests to the returned policy only once `load` has
 * resolved, so no request sees a half-loaded adapter. Requests to different adapters (and the base) may be in flight
 * at once; a loader sharing one set of base weights between adapters must swap them between its generations.
 */
export interface LoraAdapterLoader {
  /**
   * Loads the adapter; rejects with an error carrying `notFound: true` (or a Node `ENOENT` anywhere in its `cause`
   * chain) when there is nothing at the path (answered 404), with any other error when it cannot be loaded (400).
   */
  load(request: LoraAdapterLoadRequest): Promise<PolicyV1>
  /** Frees what `load` returned; called once the adapter's last request has been answered. Default: nothing. */
  unload?(name: string, policy: PolicyV1): Promise<void> | void
}

export const loraAdapterServeOptionsSchema = z.strictObject({
  /** Turns `POST /v1/load_lora_adapter` into a policy (see `LoraAdapterLoader`). */
  loader: z.custom<LoraAdapterLoader>(
    (value) => typeof value === 'object' && value !== null && typeof (value as LoraAdapterLoader).load === 'function',
    'must be a LoraAdapterLoader (an object with a load function)',
  ),
  /** Adapters loaded at once at most (loads in progress count); one more is a 400 until one is unloaded. Default: 8. */
  maxAdapters: z.number().int().positive().max(1024).default(8),
  /** Longest `lora_name`, in characters. Default: 256. */
  maxNameLength: z.number().int().positive().max(65_536).default(256),
  /** Longest `lora_path`, in characters. Default: 4096 (Linux's PATH_MAX). */
  maxPathLength: z.number().int().positive().max(65_536).default(4096),
})
export type LoraAdapterServeOptions = z.input<typeof loraAdapterServeOptionsSchema>

/** vLLM's `load_lora_adapter` body (`load_inplace`: replace an adapter of that name, as vLLM ≥ 0.10 allows). */
export const loadLoraAdapterRequestSchema = z.looseObject({
  lora_name: z.string().optional(),
  lora_path: z.string().optional(),
  load_inplace: z.boolean().optional(),
})

/** vLLM's `unload_lora_adapter` body (`lora_int_id` is accepted and ignored, as vLLM does). */
export const unloadLoraAdapterRequestSchema = z.looseObject({
  lora_name: z.string().optional(),
  lora_int_id: z.number().int().optional(),
})

/** Whether a loader's error means "nothing at that path" (404 rather than 400). */
export function isAdapterNotFound(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 4) return false
  const record = error as { notFound?: unknown; code?: unknown; cause?: unknown }
  if (record.notFound === true || record.code === 'ENOENT') return true
  return isAdapterNotFound(record.cause, depth + 1)
}
