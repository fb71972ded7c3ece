import { z } from 'zod'
import { generationOptionsSchema } from './collect.js'

/**
 * `createAsyncCollector`'s options (the collector's worker threads are the Node entry's; the schema, plain data, is in
 * the browser entry too, where the trainer's `config.asyncRollout` takes its defaults from it before refusing it).
 */
export const asyncCollectorOptionsSchema = z.strictObject({
  /**
   * The rollout worker module, by absolute path or URL: it exports `createRolloutWorker(data, context)` (or a
   * default function) returning a `RolloutWorkerSetup` (environments, policy, prompt, setWeights). Each worker
   * thread imports it, so it is plain JavaScript unless `execArgv` loads a TypeScript loader.
   */
  worker: z.union([z.string().min(1), z.instanceof(URL)]),
  /** Given to `createRolloutWorker` (structured-cloned into every worker: plain data, typed arrays). */
  workerData: z.unknown().optional(),
  /** Worker threads. Default 1. */
  workers: z.number().int().min(1).default(1),
  /** Reset seeds per batch (each environment plays each `groupSize` times). Default 32. */
  episodesPerBatch: z.number().int().min(1).default(32),
  groupSize: z.number().int().min(1).default(1),
  /** Episodes in flight per worker; their requests are batched. Default 32. */
  concurrency: z.number().int().min(1).default(32),
  maxTurns: z.number().int().min(1).default(64),
  maxBatchSize: z.number().int().min(1).optional(),
  generateTimeoutMs: z.number().positive().optional(),
  generation: generationOptionsSchema.default({ maxTokens: 256 }),
  trainRoles: z.array(z.string()).min(1).optional(),
  learnerPolicyIds: z.array(z.string()).min(1).optional(),
  /**
   * `collect`'s `stepping` in the workers: `'per-trajectory'` for a worker policy that batches requests as they come (a
   * local policy on a `GenerationEngine`). Default: `'batched'`.
   */
  stepping: z.enum(['batched', 'per-trajectory']).default('batched'),
  /** Seeds the reset seeds and sampling of batch b (a function of (seed, b) only). Default 0. */
  seed: z.number().int().default(0),
  /** The version of the weights the workers start with (their `workerData`). Default 0. */
  initialVersion: z.number().int().min(0).default(0),
  /**
   * The staleness bound: a batch played with weights of version v is handed to a consumer at version c only
   * if c − v ≤ maxStaleness (older ones are dropped and counted), and no batch is started while the newest
   * pushed weights are already further behind. Default 1 (one-step off-policy, as in pipelined RL).
   */
  maxStaleness: z.number().int().min(0).default(1),
  /** Finished batches kept waiting beyond one per worker (more overlap, more staleness). Default 0. */
  prefetch: z.number().int().min(0).default(0),
  /**
   * Node options of the worker threads. Default: the process's, less the `@ludic/source` export condition (the
   * worker entry is built JavaScript that imports built packages; that condition, set by Ludic's own tests,
   * would point it at TypeScript sources).
   */
  execArgv: z.array(z.string()).optional(),
})
export type AsyncCollectorOptions = z.input<typeof asyncCollectorOptionsSchema>
