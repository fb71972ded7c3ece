import {
  completionSchema,
  LudicError,
  ParseError,
  parseInput,
  stepOutcomeSchema,
  turnViewSchema,
  type Completion,
  type EnvironmentV1,
  type GenerationRequest,
  type PolicyV1,
  type StepOutcome,
  type Trajectory,
  type Turn,
  type TurnView,
} from '@ludic/core'
import type { z } from 'zod'
import { generateEach, type GenerationResult } from './generation-batch-error.js'

/** Where episodes get environment instances: one per episode in flight, given back when it ends. */
export interface EnvironmentSource {
  acquire(): EnvironmentV1
  /** Takes back an instance whose episode ended cleanly (a failed episode's instance is dropped). */
  release(environment: EnvironmentV1): void
}

/** One episode to play. */
export interface EpisodePlan {
  /** Unique; becomes `Trajectory.id`. */
  trajectoryId: string
  /** Becomes `Trajectory.groupId`. */
  groupId: string
  environmentId: string
  /** The environment's reset seed. */
  seed: number
  environment: EnvironmentSource
  /** The policy playing `role` in this episode; `undefined` fails the episode when that role must act. */
  policyFor(role: string): PolicyV1 | undefined
  /** The generation request for turn `turnIndex` (prompt, generation parameters, seed). */
  request(view: TurnView, history: readonly Turn[], turnIndex: number): GenerationRequest
}

/** The step an episode failed at: resetting, building the prompt, generating, or stepping the environment. */
export type EpisodeFailureStage = 'reset' | 'prompt' | 'generate' | 'step'

/** A failed episode. Its trajectory (with the turns played before the failure) carries `error` too. */
export interface EpisodeFailure {
  trajectoryId: string
  environmentId: string
  seed: number
  groupId: string
  /** The turn that failed (= number of turns played). */
  turnIndex: number
  stage: EpisodeFailureStage
  /** The role to act when it failed, when known. */
  role?: string
  policyId?: string
  /** `error.name: error.message`. */
  message: string
  error: unknown
}

export interface RunEpisodesOptions {
  /** Pulled lazily as slots free up; may be endless (stop it with `signal`). */
  episodes: Iterable<EpisodePlan>
  /** Episodes in flight at most. */
  concurrency: number
  /** An episode still going after this many turns ends with `truncated: true`. */
  maxTurns: number
  /** Requests per `generate` call at most. Default: no limit (at most `concurrency`). */
  maxBatchSize?: number | undefined
  /**
   * A `generate` call that has not answered after this long fails its episodes and is aborted through its
   * `signal` (a local model stops at its next decode step; a late answer is ignored, and a policy that
   * ignores the signal may get a new call while the old one still runs). Default: no limit.
   */
  generateTimeoutMs?: number | undefined
  /** When aborted, no new episode starts; those in flight finish, then the run resolves. */
  signal?: AbortSignal | undefined
  /**
   * `'batched'` (default): a policy has one `generate` call in flight, holding every request waiting on it, so an
   * episode waits for the slowest request of its batch. `'per-trajectory'`: each request is its own call as soon as
   * its episode needs it, and each episode steps as soon as its own completion returns (no batch barrier) — for
   * remote policies, whose servers batch concurrent requests themselves.
   */
  stepping?: 'batched' | 'per-trajectory' | undefined
  /** Called once per episode as it ends, in the order they end. Throwing stops the run (it rejects). */
  onEpisodeEnd(trajectory: Trajectory, failure: EpisodeFailure | undefined, plan: EpisodePlan): void
}

interface Episode {
  plan: EpisodePlan
  /** Position in the plan order; orders requests inside a batch. */
  ordinal: number
  environment: EnvironmentV1 | undefined
  turns: Turn[]
  returns: Record<string, number>
  view: TurnView | undefined
  policy: PolicyV1 | undefined
  request: GenerationRequest | undefined
}

/**
 * Plays episodes with up to `concurrency` in flight, batching across episodes: every request waiting on
 * the same policy (same object) goes into one `generate` call, and a policy has one call in flight at a
 * time, so requests that arrive meanwhile wait for the next call. The rollout passes the completion
 * text as the action; the environment extracts the move.
 *
 * The result does not depend on scheduling: an episode is a function of its environment, its reset seed
 * and the policies' answers to its requests (whose seeds the plan fixes), never of which other episodes
 * shared its batches — so a policy whose output is a function of the request gives the same
 * trajectories at any concurrency. Failures (a throwing policy, environment or prompt function, a
 * malformed completion, a timeout) end that episode only, with `error` set, and are reported.
 */
export function runEpisodes(options: RunEpisodesOptions): Promise<void> {
  const { concurrency, maxTurns, generateTimeoutMs, signal } = options
  const perTrajectory = options.stepping === 'per-trajectory'
  const maxBatchSize = perTrajectory ? 1 : (options.maxBatchSize ?? Number.POSITIVE_INFINITY)
  return new Promise<void>((resolve, reject) => {
    const iterator = options.episodes[Symbol.iterator]()
    const queues = new Map<PolicyV1, Episode[]>()
    const busy = new Set<PolicyV1>()
    let exhausted = false
    let stopped = false
    let pumping = false
    let active = 0
    let ordinal = 0

    const stop = (error?: unknown) => {
      if (stopped) return
      stopped = true
      if (!exhausted) iterator.return?.()
      if (error === undefined) resolve()
      else reject(error)
    }

    const finish = (
      episode: Episode,
      ending:
        | { done: boolean; truncated: boolean }
        | { failure: Omit<EpisodeFailure, 'trajectoryId' | 'environmentId' | 'seed' | 'groupId' | 'turnIndex' | 'message'> },
    ) => {
      const { plan, environment } = episode
      active--
      let failure: EpisodeFailure | undefined
      if ('failure' in ending) {
        const error = ending.failure.error
        failure = {
          trajectoryId: plan.trajectoryId,
          environmentId: plan.environmentId,
          seed: plan.seed,
          groupId: plan.groupId,
          turnIndex: episode.turns.length,
          ...ending.failure,
          message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
        }
      } else if (environment !== undefined) {
        plan.environment.release(environment)
      }
      const roles = environment === undefined ? [] : [...environment.roles]
      const seated = roles.flatMap((role) => {
        const policy = plan.policyFor(role)
        return policy === undefined ? [] : [[role, policy.id] as const]
      })
      const trajectory: Trajectory = {
        id: plan.trajectoryId,
        environmentId: plan.environmentId,
        seed: plan.seed,
        groupId: plan.groupId,
        roles,
        ...(seated.length === 0 ? {} : { policyIds: Object.fromEntries(seated) }),
        turns: episode.turns,
        returns: episode.returns,
        done: 'failure' in ending ? false : ending.done,
        truncated: 'failure' in ending ? false : ending.truncated,
        ...(failure === undefined ? {} : { error: failure.message }),
      }
      options.onEpisodeEnd(trajectory, failure, plan)
    }

    const fail = (episode: Episode, stage: EpisodeFailureStage, error: unknown) => {
      const role = episode.view?.role
      const policyId = stage === 'generate' ? episode.policy?.id : undefined
      finish(episode, { failure: { stage, error, ...(role === undefined ? {} : { role }), ...(policyId === undefined ? {} : { policyId }) } })
    }

    /** Checks the view, finds the acting policy, builds the request and queues it. */
    const prepare = (episode: Episode, view: unknown, stage: 'reset' | 'step') => {
      const environment = episode.environment!
      const parsed = parseOrError(turnViewSchema, view, `the turn view of environment '${environment.id}'`)
      if (parsed instanceof Error) return fail(episode, stage, parsed)
      if (!environment.roles.includes(parsed.role)) {
        return fail(
          episode,
          stage,
          new LudicError(`Environment '${environment.id}' gave the turn to '${parsed.role}', not one of its roles ${environment.roles.join(', ')}`),
        )
      }
      episode.view = parsed
      const policy = episode.plan.policyFor(parsed.role)
      if (policy === undefined) return fail(episode, stage, new LudicError(`No policy plays role '${parsed.role}' of environment '${environment.id}'`))
      episode.policy = policy
      try {
        episode.request = episode.plan.request(parsed, episode.turns, episode.turns.length)
      } catch (error) {
        return fail(episode, 'prompt', error)
      }
      let queue = queues.get(policy)
      if (queue === undefined) queues.set(policy, (queue = []))
      queue.push(episode)
    }

    const start = (plan: EpisodePlan) => {
      const episode: Episode = {
        plan,
        ordinal: ordinal++,
        environment: undefined,
        turns: [],
        returns: {},
        view: undefined,
        policy: undefined,
        request: undefined,
      }
      let view: TurnView
      try {
        episode.environment = plan.environment.acquire()
        for (const role of episode.environment.roles) episode.returns[role] = 0
        view = episode.environment.reset(plan.seed)
      } catch (error) {
        return fail(episode, 'reset', error)
      }
      prepare(episode, view, 'reset')
    }

    /** Plays the completion as the action and moves the episode on. */
    const advance = (episode: Episode, result: GenerationResult) => {
      const environment = episode.environment!
      const view = episode.view!
      const policy = episode.policy!
      if (result.error !== undefined) return fail(episode, 'generate', result.error)
      const completion = parseOrError(completionSchema, result.completion, `the completion of policy '${policy.id}'`) as Completion | Error
      if (completion instanceof Error) return fail(episode, 'generate', completion)
      let outcome: StepOutcome | Error
      try {
        outcome = parseOrError(stepOutcomeSchema, environment.step(completion.text), `the step outcome of environment '${environment.id}'`)
      } catch (error) {
        return fail(episode, 'step', error)
      }
      if (outcome instanceof Error) return fail(episode, 'step', outcome)
      const turn: Turn = {
        index: episode.turns.length,
        role: view.role,
        observation: view.observation,
        ...(view.legalActions === undefined ? {} : { legalActions: [...view.legalActions] }),
        ...(view.stateKey === undefined ? {} : { stateKey: view.stateKey }),
        action: completion.text,
        completion,
        policyId: policy.id,
        rewards: { ...outcome.rewards },
        invalidAction: outcome.info.invalidAction ?? false,
      }
      episode.turns.push(turn)
      for (const [role, reward] of Object.entries(outcome.rewards)) episode.returns[role] = (episode.returns[role] ?? 0) + reward
      if (outcome.done || outcome.truncated) return finish(episode, { done: outcome.done, truncated: outcome.truncated })
      if (episode.turns.length >= maxTurns) return finish(episode, { done: false, truncated: true })
      prepare(episode, outcome.next, 'step')
    }

    const dispatch = (policy: PolicyV1, queue: Episode[]) => {
      queue.sort((a, b) => a.ordinal - b.ordinal)
      const batch = queue.splice(0, maxBatchSize)
      const requests = batch.map((episode) => episode.request!)
      if (!perTrajectory) busy.add(policy)
      let settled = false
      let timer: ReturnType<typeof setTimeout> | undefined
      const settle = (results: readonly GenerationResult[]) => {
        if (settled || stopped) return
        settled = true
        if (timer !== undefined) clearTimeout(timer)
        busy.delete(policy)
        try {
          batch.forEach((episode, index) => advance(episode, results[index]!))
        } catch (error) {
          return stop(error) // onEpisodeEnd threw
        }
        pump()
      }
      // A call past its deadline fails its episodes and is aborted: a local model stops at its next decode step.
      const deadline = generateTimeoutMs === undefined ? undefined : new AbortController()
      if (deadline !== undefined) {
        timer = setTimeout(() => {
          const error = new LudicError(`Policy '${policy.id}' did not answer a batch of ${requests.length} requests within ${generateTimeoutMs} ms`)
          deadline.abort(error)
          settle(requests.map(() => ({ error })))
        }, generateTimeoutMs)
      }
      generateEach(policy, requests, deadline === undefined ? undefined : { signal: deadline.signal }).then(settle, (error: unknown) =>
        settle(requests.map(() => ({ error }))),
      )
    }

    const pump = () => {
      if (stopped || pumping) return
      pumping = true
      try {
        while (!exhausted && active < concurrency && !(signal?.aborted ?? false)) {
          const next = iterator.next()
          if (next.done === true) {
            exhausted = true
            break
          }
          active++
          start(next.value)
        }
        for (const [policy, queue] of queues) while (queue.length > 0 && !busy.has(policy)) dispatch(policy, queue)
        if (active === 0 && (exhausted || (signal?.aborted ?? false))) stop()
      } catch (error) {
        stop(error) // the episode iterator or onEpisodeEnd threw
      } finally {
        pumping = false
      }
    }

    pump()
  })
}

/** `parseInput` with its `ParseError` returned rather than thrown: the episode fails, the others go on. */
function parseOrError<Schema extends z.ZodType>(schema: Schema, value: unknown, source: string): z.output<Schema> | ParseError {
  try {
    return parseInput(schema, value, { source })
  } catch (error) {
    if (ParseError.isInstance(error)) return error
    throw error
  }
}
