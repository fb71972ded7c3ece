import { InvalidArgumentError, LudicError, parseArgument } from '@ludic/core'
import type { LoraAdapters } from '@ludic/model'
import { z } from 'zod'
import { createChanges, playDisaggregatedBatches, type DisaggregatedPlan, type PlayedBatch } from './disaggregated-play.js'
import { startDisaggregatedThread, type DisaggregatedThread } from './disaggregated-thread.js'
import type { LoraAdapterLoader, LoraAdapterLoaderSettings, LoraPublishError, SavedLoraAdapter } from './lora-adapter-loader.js'
import {
  createLoraAdapterPublisher,
  loaderSettings,
  loraAdapterPublisherOptionsSchema,
  publisherOf,
  savingTo,
  type LoraAdapterPublisher,
} from './lora-adapter-publisher.js'
import { learnerPolicyId } from './rl-config.js'
import { trainableSamples, type RolloutBatch, type RolloutSource, type RolloutSourceContext } from './rollout-source.js'

const publisherFields = loraAdapterPublisherOptionsSchema.shape

export const disaggregatedRolloutOptionsSchema = z.strictObject({
  /** The generation servers' base URLs (`http://host:port/v1`): vLLM with runtime LoRA updating, or `ludic serve --enable-lora`. */
  endpoints: publisherFields.endpoints,
  /** Sent as a bearer token to every endpoint. Default: none. */
  apiKey: publisherFields.apiKey,
  /** Where each version's adapter is written (`<directory>/step-<n>`); the servers read it from there. */
  adapterDirectory: publisherFields.directory,
  /**
   * Adapters left loaded on the servers: a batch may play an adapter `maxStaleness` updates old, so at least
   * `maxStaleness + 1` (fewer is an `InvalidArgumentError`). Default: `maxStaleness + 1`.
   */
  keepLoaded: z.number().int().min(1).max(64).optional(),
  keepLast: publisherFields.keepLast,
  /** Deadline of one adapter load or unload, in ms. Default: 60 000. */
  publishTimeoutMs: publisherFields.timeoutMs,
  /** `base_model_name_or_path` in each adapter's `adapter_config.json`. Default: none. */
  baseModel: publisherFields.baseModel,
  /**
   * The staleness bound, as the async collector's: the batch of step s is started only once the adapter of version
   * ≥ s − maxStaleness is loaded everywhere, so every batch is used (none dropped). Default 1.
   */
  maxStaleness: z.number().int().min(0).max(64).default(1),
  /** Truncation of the per-token importance ratio π_current / π_rollout (as `asyncRollout.importanceCap`). Default 2. */
  importanceCap: z.number().min(1).default(2),
  /**
   * Partial rollouts across updates (AReaL's, verl's): a batch's episodes move to each newer adapter as it is loaded —
   * every request (an episode's turn) goes to the newest adapter loaded when it is issued, not the one the batch started
   * with — and each completion's tokens carry the version that sampled them (`Completion.tokenPolicyVersions`), so the
   * update's importance correction and its staleness metrics (`tokenStalenessMean`) see each token's own version; a
   * batch's `policyVersion` stays the adapter it started with (its oldest). The switch is between requests: a request
   * in flight ends on the adapter it was sent to (the OpenAI protocol has no way to move it). Needs `maxStaleness` ≥ 1
   * (at 0 a batch waits for its step's adapter, and no newer one comes while it plays: refused). Default false (a
   * batch plays one adapter).
   */
  partialRollouts: z.boolean().default(false),
  /**
   * Episodes in flight over all endpoints (spread round-robin); each steps as soon as its own completion returns
   * (`collect`'s `stepping: 'per-trajectory'`). Default: the config's `batch.concurrency`.
   */
  concurrency: z.number().int().min(1).max(100_000).optional(),
  /** Deadline of one generation request, in ms. Default: 120 000. */
  requestTimeoutMs: z.number().int().positive().default(120_000),
  /** Retries of a generation request after a retryable failure. Default: 2. */
  maxRetries: z.number().int().min(0).max(16).default(2),
  /** A `fetch` for the generation requests and the adapter calls (tests, proxies). Default: the global one. Not with `setupModule`. */
  fetch: publisherFields.fetch,
  /**
   * Plays the episodes in a collection thread of this process instead of the trainer's thread: a module (absolute
   * path or URL) exporting `createRolloutSetup(data)` that returns `{ environments, tokenizer, prompt? }` — the
   * asynchronous mode's setup module, the same environments, tokenizer and prompt as the config's. The trainer's
   * update (synchronous kernels, a mini-batch at a time) then no longer holds the episodes back: they step, and the
   * servers generate, while it computes. A TypeScript module is loaded through tsx. Default: none (the trainer's
   * thread plays them, between its mini-batches).
   */
  setupModule: z.union([z.string().min(1), z.instanceof(URL)]).optional(),
  /** Given to `createRolloutSetup` (structured-cloned: plain data). */
  setupData: z.unknown().optional(),
  /** Node options of the collection thread. Default: the process's, less the `@ludic/source` export condition. */
  execArgv: z.array(z.string()).optional(),
})
export type DisaggregatedRolloutOptions = z.input<typeof disaggregatedRolloutOptionsSchema>

/** Where the time of disaggregated collection went, in seconds, summed over the run so far. */
export interface DisaggregatedRolloutStats {
  batches: number
  /** Wall time the batches took on the collection side (generation on the servers, environments here). */
  collectSeconds: number
  /** Time the trainer waited in `next` for a batch. */
  waitSeconds: number
  /** Time writing the adapters' files (on the trainer's path, synchronously: the only part there). */
  saveSeconds: number
  /** Time from an adapter's files written to its load on every endpoint seen by the trainer (in the background). */
  pushSeconds: number
  /** The newest adapter version loaded everywhere. */
  adapterVersion: number | undefined
}

export interface DisaggregatedRolloutSource extends RolloutSource {
  readonly stats: DisaggregatedRolloutStats
  /** The publisher (its `current` adapter, its `unloadFailures`). */
  readonly publisher: LoraAdapterPublisher
}

/**
 * Disaggregated rollouts (RollArc's fine-grained asynchrony on two kinds of process): generation is served by
 * OpenAI-compatible servers in other processes, the trainer keeps the LoRA adapters. After each update the trainer
 * saves the adapter (`<adapterDirectory>/step-<n>`) and, in the background, loads it on every endpoint through vLLM's
 * runtime adapter API; later batches name it as `model`, and versions older than `keepLoaded` are unloaded. While
 * the trainer updates on step s, the batch of step s + 1 is being played (once the adapter of version ≥ s + 1 −
 * maxStaleness is loaded), each episode stepping as soon as its own completion returns. Every sample records the
 * adapter version it was generated with (`policyVersion`); the update corrects for the staleness with the truncated
 * importance ratio (an off-policy source: the trainer refuses `recomputeOldLogprobs: false`). Seeds are the synchronous source's: the episodes of
 * step s are the same reset seeds and request seeds. With `setupModule` the episodes run in a collection thread
 * (`disaggregated-worker.ts`), playing the same batches while the trainer's thread computes.
 */
export function createDisaggregatedRolloutSource(
  context: RolloutSourceContext,
  adapters: LoraAdapters,
  options: DisaggregatedRolloutOptions,
): DisaggregatedRolloutSource {
  const settings = parseArgument(disaggregatedRolloutOptionsSchema, options, 'options')
  const { config } = context
  const { batch, seed } = config
  if (config.environments === undefined) throw new InvalidArgumentError({ argument: 'config.environments', value: undefined, message: 'are needed' })
  const keepLoaded = settings.keepLoaded ?? settings.maxStaleness + 1
  if (keepLoaded < settings.maxStaleness + 1) {
    throw new InvalidArgumentError({
      argument: 'options.keepLoaded',
      value: keepLoaded,
      message: `must be at least maxStaleness + 1 (${settings.maxStaleness + 1}): a batch may play an adapter ${settings.maxStaleness} update(s) old, which must stay loaded until it ends`,
    })
  }
  if (settings.partialRollouts && settings.maxStaleness === 0) {
    throw new InvalidArgumentError({
      argument: 'options.partialRollouts',
      value: true,
      message: 'needs maxStaleness ≥ 1: with 0 each batch waits for the adapter of its own step, and no newer one is loaded while it plays',
    })
  }
  if (settings.setupModule !== undefined && settings.fetch !== undefined) {
    throw new InvalidArgumentError({
      argument: 'options.fetch',
      value: 'a function',
      message: 'cannot cross to the collection thread of options.setupModule: give one or the other',
    })
  }
  const publisherSettings = parseArgument(
    loraAdapterPublisherOptionsSchema,
    {
      endpoints: settings.endpoints,
      directory: settings.adapterDirectory,
      keepLoaded,
      keepLast: settings.keepLast,
      timeoutMs: settings.publishTimeoutMs,
      ...(settings.apiKey === undefined ? {} : { apiKey: settings.apiKey }),
      ...(settings.baseModel === undefined ? {} : { baseModel: settings.baseModel }),
      ...(settings.fetch === undefined ? {} : { fetch: settings.fetch }),
    },
    'options',
  )
  const concurrency = settings.concurrency ?? batch.concurrency
  const plan: DisaggregatedPlan = {
    endpoints: settings.endpoints,
    policyId: learnerPolicyId,
    apiKey: settings.apiKey,
    requestTimeoutMs: settings.requestTimeoutMs,
    maxRetries: settings.maxRetries,
    concurrency,
    seed,
    episodesPerStep: batch.episodesPerStep,
    groupSize: batch.groupSize,
    maxTurns: batch.maxTurns,
    maxTokens: batch.maxTokens,
    temperature: batch.temperature,
    trainRoles: config.trainRoles,
    maxStaleness: settings.maxStaleness,
    partialRollouts: settings.partialRollouts,
  }
  const stats: DisaggregatedRolloutStats = { batches: 0, collectSeconds: 0, waitSeconds: 0, saveSeconds: 0, pushSeconds: 0, adapterVersion: undefined }
  const ready = new Map<number, PlayedBatch>()
  const changes = createChanges()
  let requested = 0
  let failure: unknown
  const fail = (error: unknown) => {
    failure ??= error
    changes.notify()
  }
  const played = (batchIndex: number, batch: PlayedBatch) => {
    stats.batches++
    stats.collectSeconds += batch.seconds
    ready.set(batchIndex, batch)
    changes.notify()
  }

  // Where the adapters are loaded and the batches played: here (the loop below), or in the collection thread.
  let thread: Promise<DisaggregatedThread> | undefined
  const startThread = (setupModule: string | URL): Promise<DisaggregatedThread> => {
    thread ??= startDisaggregatedThread(
      {
        setupModule: setupModule instanceof URL ? setupModule.href : setupModule,
        setupData: settings.setupData,
        vocabSize: config.tokenizer.vocabSize,
        plan,
        loader: withoutFetch(loaderSettings(publisherSettings)),
      },
      settings.execArgv,
      { played, failed: fail },
    )
    return thread
  }
  const publisher: LoraAdapterPublisher =
    settings.setupModule === undefined
      ? createLoraAdapterPublisher(publisherSettings)
      : publisherOf(
          savingTo(publisherSettings),
          threadLoader(() => startThread(settings.setupModule!)),
        )
  let running: { loop: Promise<void>; controller: AbortController } | undefined
  let pushing: Promise<void> = Promise.resolve()

  /** Writes the adapter now (on the trainer's path: the only part), then loads it in the background, in version order. */
  const publish = (version: number) => {
    const saveStarted = performance.now()
    const saving = publisher.save(adapters, version)
    saving.catch(() => {}) // observed through pushing, below
    stats.saveSeconds += (performance.now() - saveStarted) / 1000
    const pushStarted = performance.now()
    pushing = pushing
      .then(() => saving)
      .then((saved) => publisher.push(saved))
      .then(() => {
        stats.pushSeconds += (performance.now() - pushStarted) / 1000
        stats.adapterVersion = publisher.current?.version
        changes.notify()
      }, fail)
  }

  return {
    offPolicy: true,
    stats,
    publisher,
    async next(stepIndex): Promise<RolloutBatch> {
      requested = stepIndex
      if (running === undefined) {
        // The current weights as the first adapter (B = 0 at the start: the base model's answers).
        publish(stepIndex)
        await pushing
        if (failure !== undefined) throw failure
        const controller = new AbortController()
        if (thread === undefined) {
          const players = { environments: config.environments!, tokenizer: config.tokenizer, prompt: config.prompt, fetch: settings.fetch }
          const state = () => ({ requested, adapter: publisher.current })
          running = { controller, loop: playDisaggregatedBatches(plan, players, state, changes, stepIndex, controller.signal, played).catch(fail) }
        } else {
          ;(await thread).start(stepIndex)
          running = { controller, loop: Promise.resolve() }
        }
      }
      thread?.then((started) => started.request(stepIndex)).catch(() => {}) // a failed start is observed through pushing
      changes.notify()
      const waitStarted = performance.now()
      while (!ready.has(stepIndex) && failure === undefined) await changes.next()
      stats.waitSeconds += (performance.now() - waitStarted) / 1000
      if (failure !== undefined) throw failure
      const batchPlayed = ready.get(stepIndex)!
      ready.delete(stepIndex)
      if (stepIndex - batchPlayed.version > settings.maxStaleness)
        throw new LudicError(`batch ${stepIndex} was played with adapter version ${batchPlayed.version}, beyond maxStaleness ${settings.maxStaleness}`)
      const { result } = batchPlayed
      return {
        trajectories: result.trajectories,
        samples: trainableSamples(result),
        generationSeconds: batchPlayed.seconds,
        offPolicy: { policyVersion: batchPlayed.version, dropped: 0, importanceCap: settings.importanceCap },
      }
    },
    updated(stepCount) {
      publish(stepCount)
    },
    async close() {
      const stopping = running
      running = undefined
      await pushing // the last update's adapter reaches the servers (each load bounded by publishTimeoutMs)
      stopping?.controller.abort(new LudicError('the rollout source closed'))
      changes.notify()
      await stopping?.loop
      ready.clear()
      const started = thread
      thread = undefined
      await started?.then(
        (running) => running.close(),
        () => {},
      )
    },
  }
}

/**
 * The loading half of a source with a collection thread: the thread loads each adapter (where the batches wait for
 * them); `current` and `unloadFailures` follow its answers. The saving half stays on the trainer's thread.
 */
function threadLoader(thread: () => Promise<DisaggregatedThread>): LoraAdapterLoader {
  let current: SavedLoraAdapter | undefined
  const unloadFailures: LoraPublishError[] = []
  return {
    async push(saved, signal) {
      signal?.throwIfAborted()
      const loading = (await thread()).load(saved)
      let onAbort = () => {}
      const aborted = new Promise<never>((_, reject) => {
        onAbort = () => reject(signal!.reason)
      })
      signal?.addEventListener('abort', onAbort, { once: true })
      try {
        const { unloadFailures: failed } = await (signal === undefined ? loading : Promise.race([loading, aborted]))
        if (current === undefined || saved.version > current.version) current = saved
        unloadFailures.push(...failed)
      } finally {
        signal?.removeEventListener('abort', onAbort) // a long-lived signal keeps no listener per push
      }
    },
    get current() {
      return current
    },
    unloadFailures,
  }
}

/** A loader's settings that can cross to a thread (the source refuses `fetch` with `setupModule`). */
function withoutFetch({ fetch: _fetch, ...settings }: LoraAdapterLoaderSettings): Omit<LoraAdapterLoaderSettings, 'fetch'> {
  return settings
}
