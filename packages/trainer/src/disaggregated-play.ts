/**
 * One batch of a disaggregated rollout source, as plain data in and out: the same code plays it on the trainer's
 * thread and in the source's collection thread (`disaggregated-worker.ts`), so both play the same episodes.
 * No TensorFlow.js here.
 */
import { deriveSeed, type EnvironmentV1, type PolicyV1, type TokenizerV1 } from '@ludic/core'
import { collect, createOpenAICompatiblePolicy, type CollectResult, type PromptTemplate } from '@ludic/rollout'

/** The reset seeds of step `stepIndex`'s episodes: consecutive from one derived from the run's seed (every source alike). */
export function episodeSeeds(seed: number, stepIndex: number, count: number): number[] {
  const first = deriveSeed('ludic.episodes', seed, stepIndex) % 2 ** 30
  return Array.from({ length: count }, (_, index) => first + index)
}

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
 * over the endpoints, each stepping as soon as its own completion returns (`stepping: 'per-trajectory'`).
 */
export async function playDisaggregatedBatch(
  plan: DisaggregatedPlan,
  players: DisaggregatedPlayers,
  adapter: PlayedAdapter,
  batchIndex: number,
  signal: AbortSignal,
): Promise<{ result: CollectResult; seconds: number }> {
  const policies: PolicyV1[] = plan.endpoints.map((endpoint) =>
    createOpenAICompatiblePolicy({
      baseURL: endpoint,
      model: adapter.name,
      id: plan.policyId,
      concurrency: plan.concurrency,
      timeoutMs: plan.requestTimeoutMs,
      maxRetries: plan.maxRetries,
      tokenizer: players.tokenizer,
      ...(plan.apiKey === undefined ? {} : { apiKey: plan.apiKey }),
      ...(players.fetch === undefined ? {} : { fetch: players.fetch }),
    }),
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
