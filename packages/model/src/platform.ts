import type { MatmulHelpers } from './generation/matmul-control.js'

/** A helper thread drawing rows of a sampling step (`sampleTokens`; Node's is `sampling-workers.ts`). */
export interface SamplingHelper {
  /**
   * Hands `rows` (each `vocab` logits from `offset` of `logits`, its temperature and uniform) to the helper, runs
   * `mine` (the calling thread's share) meanwhile, and returns each row's `drawPlain` result (token, largest logit,
   * weights' sum: three floats a row), or undefined when the helper failed (the caller then draws them itself).
   */
  draw(
    logits: Float32Array,
    vocab: number,
    rows: readonly { offset: number; temperature: number; uniform: number }[],
    mine: () => void,
  ): Float64Array | undefined
}

/**
 * What the package's browser-safe modules get from the runtime when it has it. The Node entry registers Node's
 * (`node-platform.ts`: worker threads for the host decoder's matmuls, V8's relaxed-SIMD flag, the machine's
 * memory, environment variables, a helper thread for sampling); the browser entry registers nothing, and each module
 * falls back as it documents: the host decoder's products and the sampling run on the calling thread alone, relaxed SIMD is used where the browser has it, the
 * default parameter budget is `browserParameterBytes`.
 */
export interface ModelPlatform {
  /** Lends up to `count` helper threads to a matmul arena's shared memory (see `matmul-workers.ts`). */
  lendMatmulHelpers?: (count: number, module: object, memory: object, control: number, slots: Int32Array) => MatmulHelpers
  /** The process's sampling helper thread, once it is running (undefined before, and where there is none). */
  samplingHelper?: () => SamplingHelper | undefined
  /** Lets WebAssembly modules use relaxed SIMD where the runtime keeps it behind a flag (Node 20's V8). */
  enableRelaxedSimd?: () => void
  /** The machine's memory in bytes. */
  totalMemoryBytes?: () => number
  /** An environment variable, or undefined. */
  environmentVariable?: (name: string) => string | undefined
}

/** Parts to register; `undefined` takes a part away. */
export type ModelPlatformParts = { [Part in keyof ModelPlatform]?: ModelPlatform[Part] | undefined }

let registered: ModelPlatformParts = {}

/** Registers the runtime's parts (the Node entry does, on import). Later registrations replace earlier ones, part by part. */
export function setPlatform(parts: ModelPlatformParts): void {
  registered = { ...registered, ...parts }
}

/** The parts registered so far. */
export function platform(): Readonly<ModelPlatformParts> {
  return registered
}
