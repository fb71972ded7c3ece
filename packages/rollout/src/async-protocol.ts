import type { EnvironmentV1, PolicyV1, Sample, Trajectory } from '@ludic/core'
import type { EpisodeFailure } from './episode-runner.js'
import type { CollectResult, GenerationOptions } from './collect.js'
import type { PromptTemplate } from './prompt-template.js'

/**
 * What a rollout worker module gives the worker thread it runs in: the environments to play, the policy
 * (usually a local model with its own backend and weights), the prompt, and how new weights reach the policy.
 * The module exports it as `createRolloutWorker(data, context)` (or as its default export).
 */
export interface RolloutWorkerSetup {
  environments: readonly (() => EnvironmentV1)[]
  policy: PolicyV1
  /** Default `'{observation}'`. */
  prompt?: PromptTemplate
  /**
   * Replaces the policy's weights with a payload given to `pushWeights` (opaque to the collector). Without partial
   * rollouts (see `VersionedPolicy`) it runs between batches; with them, as soon as the weights arrive, beside a batch in
   * flight: it should then replace them all without yielding midway (the engine picks the weights up at the start of
   * its next iteration, so one that awaits between two tensors lets an iteration run on a mix).
   */
  setWeights?(weights: unknown, version: number): void | Promise<void>
  /**
   * Extra plain data the worker computes for each batch it played (e.g. log-probs under a reference model, so
   * the trainer need not), delivered as the batch's `annotation`. Runs after the batch, in the worker.
   */
  annotate?(result: CollectResult, version: number): unknown
  /** Frees what the worker holds (called when the collector closes). */
  dispose?(): void | Promise<void>
}

/**
 * What a worker's policy may offer besides `PolicyV1` (a `@ludic/model` local policy does): `setPolicyVersion`, told each
 * weights version after `setWeights` (and the first version at setup), so that its completions say which version
 * sampled each token (`Completion.tokenPolicyVersions`); and `partialRollouts: true` (a local policy on a
 * `GenerationEngine`), so that the worker applies new weights as soon as they arrive, while a batch is in flight: the
 * running sequences keep their tokens and continue on the new weights (partial rollouts, as verl's and AReaL's), instead
 * of the new weights waiting for the batch to end.
 */
export interface VersionedPolicy {
  setPolicyVersion(version: number): void
  readonly partialRollouts?: boolean
}

/** The worker's policy as a `VersionedPolicy`, when it is one. */
export function versionedPolicy(policy: PolicyV1): VersionedPolicy | undefined {
  const candidate = policy as Partial<VersionedPolicy>
  return typeof candidate.setPolicyVersion === 'function' ? (candidate as VersionedPolicy) : undefined
}

export interface RolloutWorkerContext {
  /** 0 … workers − 1. */
  workerIndex: number
}

export type CreateRolloutWorker = (data: unknown, context: RolloutWorkerContext) => RolloutWorkerSetup | Promise<RolloutWorkerSetup>

/** The per-batch part of `collect`'s options, the same for every batch. */
export interface AsyncBatchPlan {
  episodesPerBatch: number
  groupSize: number
  concurrency: number
  maxTurns: number
  maxBatchSize?: number | undefined
  generateTimeoutMs?: number | undefined
  generation: GenerationOptions
  trainRoles?: string[] | undefined
  learnerPolicyIds?: string[] | undefined
  /** `collect`'s `stepping`. */
  stepping: 'batched' | 'per-trajectory'
}

export interface SerializedError {
  name: string
  message: string
  stack?: string | undefined
}

export type ToWorker =
  | { type: 'weights'; version: number; weights: unknown }
  | { type: 'collect'; batchIndex: number; seeds: number[]; samplingSeed: number; runId: string }
  | { type: 'close' }

export type SerializedFailure = Omit<EpisodeFailure, 'error'> & { error: SerializedError }

/** A batch's failed episodes as they cross a thread boundary (their errors serialized). */
export function serializeFailures(failures: readonly EpisodeFailure[]): SerializedFailure[] {
  return failures.map((failure) => ({ ...failure, error: serializeError(failure.error) }))
}

/** Failed episodes that crossed a thread boundary, their errors as `Error`s again. */
export function deserializeFailures(failures: readonly SerializedFailure[]): EpisodeFailure[] {
  return failures.map((failure) => ({ ...failure, error: deserializeError(failure.error) }))
}

/** A batch played in a worker as it crosses back: its episodes, the policy version played, its wall time, failures serialized. */
export interface SerializedBatch {
  batchIndex: number
  /** The oldest version that played it: the oldest of its samples' `policyVersion`s (the version it started with when it has none). */
  version: number
  seconds: number
  trajectories: Trajectory[]
  samples: Sample[]
  failures: SerializedFailure[]
}

export type FromWorker =
  | { type: 'ready' }
  | ({ type: 'batch'; annotation?: unknown } & SerializedBatch)
  | { type: 'error'; stage: 'setup' | 'weights' | 'collect'; batchIndex?: number; error: SerializedError }
  | { type: 'closed' }

export interface WorkerStartData {
  module: string
  data: unknown
  workerIndex: number
  initialVersion: number
  plan: AsyncBatchPlan
}

export function serializeError(error: unknown): SerializedError {
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack }
  return { name: 'Error', message: String(error) }
}

/** An error that crossed a thread boundary: same name, message and stack, as an `Error`. */
export function deserializeError(serialized: SerializedError): Error {
  const error = new Error(serialized.message)
  error.name = serialized.name
  if (serialized.stack !== undefined) error.stack = serialized.stack
  return error
}
