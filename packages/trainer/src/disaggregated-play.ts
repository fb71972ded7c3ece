/**
 * One batch of a disaggregated rollout source, as plain data in and out: the same code plays it on the trainer's
 * thread and in the source's collection thread (`disaggregated-worker.ts`), so both play the same episodes.
 * No TensorFlow.js here.
 */
import { deriveSeed, type Completion, type EnvironmentV1, type PolicyV1, type TokenizerV1 } from '@ludic/core'
import { collect, createOpenAICompatiblePolicy, GenerationBatchError, type CollectResult, type PromptTemplate } from '@ludic/rollout'
import { episodeSeeds } from './episode-seeds.js'

/** How a disaggregated source plays its batches: the servers and the run's collection settings (structured-cloneable). */
export interface DisaggregatedPlan {
  endpoints: string[]
  /** The trained policy's id (`learnerPolicyId`): its samples are trained on. */
  policyId: string
  apiKey?: string | undefined
  requestTimeoutMs: number
  maxRetries: number
  /** Episodes in flight over all endpoints. */
  concurrency: number
  seed: number
  episodesPerStep: number
  groupSize: number
  maxTurns: number
  maxTokens: number
  temperature: number
  trainRoles?: string[] | undefined
  /** Batch b is started once an adapter of version ≥ b − maxStaleness is loaded (and the trainer asked for b − 1). */
  maxStaleness: number
  /**
   * Partial rollouts: each request goes to the newest adapter loaded when it is issued, not the batch's first, and its
   * completion's tokens carry that version (`tokenPolicyVersions`). Default (absent) false.
   */
  partialRollouts?: boolean | undefined
}

/** What plays the episodes: the config's (trainer's thread) or the setup module's (collection thread). */
export interface DisaggregatedPlayers {
  environments: readonly (() => EnvironmentV1)[]
  tokenizer: TokenizerV1
  prompt?: PromptTemplate | undefined
  fetch?: typeof globalThis.fetch | undefined
}

/** A loaded adapter: the model name the requests use, and its version (stamped on every sample). */
export interface PlayedAdapter {
  name: string
  version: number
}

/**
 * Batch `batchIndex` with `adapter`: the synchronous source's reset and sampling seeds, episodes spread round-robin
 * over the endpoints, each stepping as soon as its own completion returns (`stepping: 'per-trajectory'`). With
 * `plan.partialRollouts`, each request goes to `newest()` instead (read as it is issued) and its tokens carry its version.
 */
export async function playDisaggregatedBatch(
  plan: DisaggregatedPlan,
  players: DisaggregatedPlayers,
  adapter: PlayedAdapter,
  batchIndex: number,
  signal: AbortSignal,
  newest: () => PlayedAdapter | undefined = () => adapter,
): Promise<{ result: CollectResult; seconds: number }> {
  const client = (endpoint: string, name: string) =>
    createOpenAICompatiblePolicy({
      baseURL: endpoint,
      model: name,
      id: plan.policyId,
      concurrency: plan.concurrency,
      timeoutMs: plan.requestTimeoutMs,
      maxRetries: plan.maxRetries,
      tokenizer: players.tokenizer,
      ...(plan.apiKey === undefined ? {} : { apiKey: plan.apiKey }),
      ...(players.fetch === undefined ? {} : { fetch: players.fetch }),
    })
  const policies: PolicyV1[] = plan.endpoints.map((endpoint) =>
    plan.partialRollouts === true ? followingNewest(plan.policyId, (name) => client(endpoint, name), adapter, newest) : client(endpoint, adapter.name),
  )
  const started = performance.now()
  const result = await collect({
    environments: [...players.environments],
    policies: ({ episodeIndex }) => policies[episodeIndex % policies.length]!,
    seeds: episodeSeeds(plan.seed, batchIndex, plan.episodesPerStep),
    groupSize: plan.groupSize,
    concurrency: plan.concurrency,
    maxTurns: plan.maxTurns,
    stepping: 'per-trajectory',
    ...(players.prompt === undefined ? {} : { prompt: players.prompt }),
    generation: { maxTokens: plan.maxTokens, temperature: plan.temperature },
    samplingSeed: deriveSeed('ludic.sampling', plan.seed, batchIndex),
    runId: `step-${batchIndex}`,
    policyVersion: adapter.version,
    signal,
    ...(plan.trainRoles === undefined ? {} : { trainRoles: plan.trainRoles }),
  })
  return { result, seconds: (performance.now() - started) / 1000 }
}

/**
 * A policy that sends each `generate` call to the newest adapter loaded when the call is issued (`newest()`, never
 * older than `first`, the batch's), through one client per adapter (`client(name)`, made once each; `collect`'s
 * `concurrency` bounds the requests in flight over all of them), and stamps every completion's tokens with that
 * adapter's version — also the completions of a call that partly failed.
 */
export function followingNewest(policyId: string, client: (name: string) => PolicyV1, first: PlayedAdapter, newest: () => PlayedAdapter | undefined): PolicyV1 {
  const clients = new Map<string, PolicyV1>()
  const stamped = (completion: Completion, version: number): Completion => ({
    ...completion,
    tokenPolicyVersions: new Int32Array(completion.tokenIds.length).fill(version),
  })
  return {
    specificationVersion: 'v1',
    id: policyId,
    async generate(requests, options) {
      const current = newest()
      const adapter = current !== undefined && current.version > first.version ? current : first
      let policy = clients.get(adapter.name)
      if (policy === undefined) clients.set(adapter.name, (policy = client(adapter.name)))
      try {
        return (await policy.generate(requests, options)).map((completion) => stamped(completion, adapter.version))
      } catch (error) {
        if (!GenerationBatchError.isInstance(error)) throw error
        throw new GenerationBatchError({
          policyId: error.policyId,
          completions: error.completions.map((completion) => (completion === undefined ? undefined : stamped(completion, adapter.version))),
          errors: error.errors,
          message: error.message,
        })
      }
    },
  }
}

/** A batch played: its result, the adapter version it was played with, its wall time. */
export interface PlayedBatch {
  result: CollectResult
  version: number
  seconds: number
}

/** Wakes whoever waits for a change (a batch played, an adapter loaded, a step asked for). */
export interface Changes {
  notify(): void
  /** Resolves at the next `notify`. */
  next(): Promise<void>
}

export function createChanges(): Changes {
  let wake: () => void = () => {}
  let changed = new Promise<void>((resolve) => {
    wake = resolve
  })
  return {
    notify() {
      const resolve = wake
      changed = new Promise<void>((next) => {
        wake = next
      })
      resolve()
    },
    next: () => changed,
  }
}

/**
 * Plays batch after batch from `first` until `signal` aborts: batch b once the trainer asked for b − 1 and an adapter
 * of version ≥ b − maxStaleness is loaded (`state()`, re-read at every `changes.notify()`), with the newest one
 * loaded. The same loop runs on the trainer's thread and in the collection thread, beside whichever loads the adapters.
 */
export async function playDisaggregatedBatches(
  plan: DisaggregatedPlan,
  players: DisaggregatedPlayers,
  state: () => { requested: number; adapter: PlayedAdapter | undefined },
  changes: Changes,
  first: number,
  signal: AbortSignal,
  onPlayed: (batchIndex: number, played: PlayedBatch) => void,
): Promise<void> {
  const startable = (batchIndex: number): PlayedAdapter | undefined => {
    const { requested, adapter } = state()
    return batchIndex <= requested + 1 && adapter !== undefined && adapter.version >= batchIndex - plan.maxStaleness ? adapter : undefined
  }
  for (let batchIndex = first; !signal.aborted; batchIndex++) {
    let adapter = startable(batchIndex)
    while (!signal.aborted && adapter === undefined) {
      await changes.next()
      adapter = startable(batchIndex)
    }
    if (signal.aborted || adapter === undefined) return
    const { result, seconds } = await playDisaggregatedBatch(
      plan,
      players,
      { name: adapter.name, version: adapter.version },
      batchIndex,
      signal,
      () => state().adapter,
    )
    if (signal.aborted) return
    onPlayed(batchIndex, { result, version: adapter.version, seconds })
  }
}
