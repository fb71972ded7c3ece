import {
  deriveSeed,
  describeValue,
  InvalidArgumentError,
  isPolicy,
  parseArgument,
  turnContextOf,
  type EnvironmentV1,
  type GenerationRequest,
  type PolicyV1,
  type Sample,
  type Trajectory,
} from '@ludic/core'
import { z } from 'zod'
import { runEpisodes, type EnvironmentSource, type EpisodeFailure, type EpisodePlan } from './episode-runner.js'
import { defaultPromptTemplate, renderPrompt, type PromptFunction, type PromptTemplate } from './prompt-template.js'
import { trajectoryToSamples } from './trajectory-samples.js'

/** Which episode a policy is chosen for (the `policies` function form). */
export interface PolicyContext {
  role: string
  environmentId: string
  seed: number
  /** Position of the episode in its group, 0 … groupSize − 1. */
  groupIndex: number
  /** Position of the episode in the plan: environment-major, then seed, then group index. */
  episodeIndex: number
  /** The environment's roles, in its order. */
  roles: readonly string[]
}

/**
 * The policies: one for every role (self-play), a record from role to policy (a learner against an
 * opponent; roles may come from several environments), or a function of the episode and role (e.g. to
 * seat the learner as player0 in half of the episodes). A scripted opponent is just another `PolicyV1`.
 */
export type PoliciesOption = PolicyV1 | Readonly<Record<string, PolicyV1>> | ((context: PolicyContext) => PolicyV1)

function isEnvironment(value: unknown): value is EnvironmentV1 {
  if (typeof value !== 'object' || value === null) return false
  const candidate = value as Partial<EnvironmentV1>
  return (
    candidate.specificationVersion === 'v1' &&
    typeof candidate.id === 'string' &&
    candidate.id.length > 0 &&
    Array.isArray(candidate.roles) &&
    candidate.roles.length > 0 &&
    typeof candidate.reset === 'function' &&
    typeof candidate.step === 'function'
  )
}

const functionSchema = <T>(message: string) => z.custom<T>((value) => typeof value === 'function', { message })

/** Sampling parameters of every request (the seed is derived per request, see `collect`). */
export const generationOptionsSchema = z.strictObject({
  /** Most tokens per completion. Default: 256. */
  maxTokens: z.number().int().positive().default(256),
  /** Default: the policy's (1 for local models). */
  temperature: z.number().min(0).refine(Number.isFinite, 'must be finite').optional(),
  topP: z.number().gt(0).max(1).optional(),
  topK: z.number().int().min(0).optional(),
  minP: z.number().min(0).max(1).optional(),
  /** Strings that end a completion. */
  stop: z.array(z.string().min(1)).optional(),
})
export type GenerationOptions = z.input<typeof generationOptionsSchema>

export const collectOptionsSchema = z.strictObject({
  /**
   * Environment factories, one per kind of episode (several games at once are fine). Each episode in
   * flight needs its own instance, so pass `() => createGame(options)`, not an instance; instances are
   * reused across episodes (`reset(seed)` starts afresh). Environment ids must differ.
   */
  environments: z
    .array(functionSchema<() => EnvironmentV1>('must be a function that creates an environment (each episode in flight needs its own instance)'))
    .min(1, 'needs at least one environment factory'),
  /** See `PoliciesOption`. */
  policies: z.custom<PoliciesOption>(
    (value) => isPolicy(value) || typeof value === 'function' || (typeof value === 'object' && value !== null && !Array.isArray(value)),
    { message: 'must be a PolicyV1, a record from role to PolicyV1, or a function (context) => PolicyV1' },
  ),
  /** Reset seeds (distinct integers); every environment plays every seed `groupSize` times. */
  seeds: z
    .array(z.number().int())
    .min(1, 'needs at least one seed')
    .refine((seeds) => new Set(seeds).size === seeds.length, 'must be distinct (use groupSize to play a seed several times)'),
  /** Episodes per (environment, seed): a group, for group-relative estimators (GRPO). Default: 1. */
  groupSize: z.number().int().min(1).default(1),
  /** Episodes in flight at most. Default: 32. */
  concurrency: z.number().int().min(1).default(32),
  /** Episodes still going after this many turns end with `truncated: true`. Default: 64. */
  maxTurns: z.number().int().min(1).default(64),
  /** Requests per `generate` call at most. Default: no limit (at most `concurrency`). */
  maxBatchSize: z.number().int().min(1).optional(),
  /** A `generate` call that takes longer fails its episodes (reported in `failures`) and is aborted through its signal. Default: no limit. */
  generateTimeoutMs: z.number().positive().optional(),
  /** The prompt: a string template or a function (see `PromptTemplate`). Default: `'{observation}'`. */
  prompt: z.union([z.string(), functionSchema<PromptFunction>('must be a string or a function')]).default(defaultPromptTemplate),
  /** Sampling parameters. Default: `{ maxTokens: 256 }`. */
  generation: generationOptionsSchema.default({ maxTokens: 256 }),
  /** Mixed into every request seed: change it to sample differently from the same reset seeds. Default: 0. */
  samplingSeed: z.number().int().default(0),
  /** Only turns of these policies (by id) become samples. Default: every policy's turns. */
  learnerPolicyIds: z.array(z.string()).min(1).optional(),
  /** Only turns of these roles become samples. Default: every role's. */
  trainRoles: z.array(z.string()).min(1).optional(),
  /** Prefixed to trajectory and group ids (`'<runId>/…'`), to keep them unique across calls. */
  runId: z.string().min(1).optional(),
  /**
   * Stamped on every sample as `policyVersion`; a sample whose completion carries per-token versions
   * (`Completion.tokenPolicyVersions`) carries them too, and the oldest of them as `policyVersion`.
   */
  policyVersion: z.number().int().min(0).optional(),
  /**
   * `'batched'`: requests waiting on a policy go out as one `generate` call at a time (best for a local model).
   * `'per-trajectory'`: each request is its own call and each episode steps as soon as its completion returns, with
   * up to `concurrency` episodes in flight (best for remote servers, which batch concurrent requests themselves).
   * Trajectories are the same either way for a policy whose answer depends only on the request. Default: 'batched'.
   */
  stepping: z.enum(['batched', 'per-trajectory']).default('batched'),
  /** When aborted, no new episode starts; those in flight finish and `collect` returns what it has. */
  signal: z.custom<AbortSignal>((value) => value instanceof AbortSignal, { message: 'must be an AbortSignal' }).optional(),
})
export type CollectOptions = z.input<typeof collectOptionsSchema>

export interface CollectResult {
  /**
   * Every episode played, in plan order (environment, then seed, then group index) whatever the
   * scheduling; failed episodes are here too, with `error` set and the turns played before the failure.
   */
  trajectories: Trajectory[]
  /**
   * One sample per turn of a learner policy in a trajectory that did not fail, in trajectory order then
   * turn order. Truncated trajectories give samples.
   */
  samples: Sample[]
  /** The failed episodes, in plan order. */
  failures: EpisodeFailure[]
}

/**
 * Plays every environment × seed × group index episode with up to `concurrency` in flight and every
 * request waiting on the same policy batched into one `generate` call, and returns the trajectories,
 * the training samples and the failures.
 *
 * Ids: an episode's trajectory id is `<environmentId>/<seed>/<groupIndex>` and its group id
 * `<environmentId>/<seed>` (each prefixed with `<runId>/` when given): episodes that share an
 * environment and a reset seed share a group, so a group-relative estimator compares `groupSize` plays
 * of the same starting state.
 *
 * Determinism: turn t of an episode asks with seed
 * `deriveSeed('ludic.rollout', samplingSeed, environmentId, seed, groupIndex, t)`, so the members of a
 * group sample differently and a policy that is a function of its request (a seeded sampler) gives the
 * same trajectories at any concurrency or batch composition. Timeouts are the exception: they depend on
 * the clock.
 */
export async function collect(options: CollectOptions): Promise<CollectResult> {
  const parsed = parseArgument(collectOptionsSchema, options, 'options')
  const { seeds, groupSize, generation, samplingSeed, runId } = parsed
  const prompt: PromptTemplate = parsed.prompt

  // Instantiate each environment once, to learn its id and roles and check every role has a policy.
  const sources = parsed.environments.map((factory, index) => createEnvironmentSource(factory, `options.environments.${index}`))
  const seen = new Map<string, number>()
  sources.forEach((source, index) => {
    const previous = seen.get(source.id)
    if (previous !== undefined) {
      throw new InvalidArgumentError({
        argument: `options.environments.${index}`,
        value: source.id,
        message: `has the same id as options.environments.${previous}; ids must differ`,
      })
    }
    seen.set(source.id, index)
  })

  const plans: EpisodePlan[] = []
  const usedPolicyIds = new Set<string>()
  const prefix = runId === undefined ? '' : `${runId}/`
  for (const source of sources) {
    for (const seed of seeds) {
      for (let groupIndex = 0; groupIndex < groupSize; groupIndex++) {
        const episodeIndex = plans.length
        const chosen = new Map<string, PolicyV1>()
        for (const role of source.roles) {
          const policy = choosePolicy(
            parsed.policies,
            { role, environmentId: source.id, seed, groupIndex, episodeIndex, roles: source.roles },
            source.id,
            source.roles,
          )
          chosen.set(role, policy)
          usedPolicyIds.add(policy.id)
        }
        const environmentId = source.id
        plans.push({
          trajectoryId: `${prefix}${environmentId}/${seed}/${groupIndex}`,
          groupId: `${prefix}${environmentId}/${seed}`,
          environmentId,
          seed,
          environment: source,
          policyFor: (role) => chosen.get(role),
          request: (view, history, turnIndex): GenerationRequest => ({
            messages: renderPrompt(prompt, view, history, { environmentId, role: view.role, turnIndex, seed }),
            ...generation,
            seed: deriveSeed('ludic.rollout', samplingSeed, environmentId, seed, groupIndex, turnIndex),
            turn: turnContextOf(environmentId, view),
          }),
        })
      }
    }
  }
  checkFilter(parsed.learnerPolicyIds, usedPolicyIds, 'options.learnerPolicyIds', 'the id of no policy')
  checkFilter(parsed.trainRoles, new Set(sources.flatMap((source) => source.roles)), 'options.trainRoles', 'a role of no environment')

  const ordinals = new Map(plans.map((plan, index) => [plan.trajectoryId, index]))
  const ended: { trajectory: Trajectory; failure: EpisodeFailure | undefined; ordinal: number }[] = []
  await runEpisodes({
    episodes: plans,
    concurrency: parsed.concurrency,
    maxTurns: parsed.maxTurns,
    maxBatchSize: parsed.maxBatchSize,
    generateTimeoutMs: parsed.generateTimeoutMs,
    signal: parsed.signal,
    stepping: parsed.stepping,
    onEpisodeEnd: (trajectory, failure) => ended.push({ trajectory, failure, ordinal: ordinals.get(trajectory.id)! }),
  })
  ended.sort((a, b) => a.ordinal - b.ordinal)

  const sampleOptions = { learnerPolicyIds: parsed.learnerPolicyIds, trainRoles: parsed.trainRoles, policyVersion: parsed.policyVersion }
  return {
    trajectories: ended.map(({ trajectory }) => trajectory),
    samples: ended.flatMap(({ trajectory }) => trajectoryToSamples(trajectory, sampleOptions)),
    failures: ended.flatMap(({ failure }) => (failure === undefined ? [] : [failure])),
  }
}

interface EnvironmentPool extends EnvironmentSource {
  readonly id: string
  readonly roles: readonly string[]
}

/** Calls the factory once (checking what it makes), then keeps instances for reuse across episodes. */
function createEnvironmentSource(factory: () => EnvironmentV1, argument: string): EnvironmentPool {
  let first: unknown
  try {
    first = factory()
  } catch (error) {
    throw new InvalidArgumentError({
      argument,
      value: factory,
      message: `threw when called: ${error instanceof Error ? error.message : String(error)}`,
      cause: error,
    })
  }
  if (!isEnvironment(first)) {
    throw new InvalidArgumentError({ argument, value: first, message: "must return an EnvironmentV1 (specificationVersion 'v1', id, roles, reset, step)" })
  }
  const { id } = first
  const roles = [...first.roles]
  const idle: EnvironmentV1[] = [first]
  return {
    id,
    roles,
    acquire() {
      const environment = idle.pop() ?? factory()
      if (!isEnvironment(environment) || environment.id !== id) {
        throw new InvalidArgumentError({ argument, value: environment, message: `must return an EnvironmentV1 with id '${id}' on every call` })
      }
      return environment
    },
    release(environment) {
      idle.push(environment)
    },
  }
}

function choosePolicy(policies: PoliciesOption, context: PolicyContext, environmentId: string, roles: readonly string[]): PolicyV1 {
  if (isPolicy(policies)) return policies
  if (typeof policies === 'function') {
    const policy = policies(context)
    if (!isPolicy(policy)) {
      throw new InvalidArgumentError({
        argument: 'options.policies',
        value: policy,
        message: `returned no PolicyV1 for role '${context.role}' of environment '${environmentId}' (seed ${context.seed}, group index ${context.groupIndex})`,
      })
    }
    return policy
  }
  const policy = Object.hasOwn(policies, context.role) ? policies[context.role] : undefined
  if (policy === undefined) {
    throw new InvalidArgumentError({
      argument: `options.policies.${context.role}`,
      value: policy,
      message: `no policy for role '${context.role}' (environment '${environmentId}' has roles ${roles.join(', ')}; policies given for ${Object.keys(policies).join(', ') || 'none'})`,
    })
  }
  if (!isPolicy(policy)) {
    throw new InvalidArgumentError({
      argument: `options.policies.${context.role}`,
      value: policy,
      message: "must be a PolicyV1 (specificationVersion 'v1', id, generate)",
    })
  }
  return policy
}

function checkFilter(values: readonly string[] | undefined, known: ReadonlySet<string>, argument: string, what: string): void {
  values?.forEach((value, index) => {
    if (!known.has(value)) {
      throw new InvalidArgumentError({
        argument: `${argument}.${index}`,
        value,
        message: `is ${what} in this collection (known: ${describeValue([...known].join(', '))})`,
      })
    }
  })
}
