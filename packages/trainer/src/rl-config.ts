import { policySchema, tokenizerSchema, type AdvantageEstimatorV1, type ChatMessage, type TokenizerV1, type TrajectoryScorerV1 } from '@ludic/core'
import { CausalLanguageModel, generationEngineOptionsSchema, type LearningRateSchedule } from '@ludic/model'
import { klTermEstimatorSchema, type PolicyLoss } from '@ludic/objectives'
import { asyncCollectorOptionsSchema, collectOptionsSchema, generationOptionsSchema, type PromptTemplate } from '@ludic/rollout'
import { z } from 'zod'
import { criticConfigSchema } from './experience/critic.js'
import { externalDemonstrationsConfigSchema } from './external-demonstrations.js'
import { snapshotPoolConfigSchema } from './league/snapshot-pool.js'
import { runConfigFields } from './run-config-fields.js'
import { optimizerConfigSchema } from './optimizer-config.js'
import { scheduleConfigSchema } from './schedule.js'
import { trajectoryLogConfigSchema } from './trajectory-log.js'

const functionOf = <T>(message: string) => z.custom<T>((value) => typeof value === 'function', message)
/** A multiplier per step: a schedule by name (JSON) or a function of the step. */
const scheduleSchema = z.union([scheduleConfigSchema, functionOf<LearningRateSchedule>('must be a function')])

/**
 * The id of the trained model's policy in the trainer's rollouts: samples of this id are trained on, an
 * opponent needs another.
 */
export const learnerPolicyId = 'learner'

const collectFields = collectOptionsSchema.shape
const asyncCollectorFields = asyncCollectorOptionsSchema.shape

/** How much experience a step collects and how it is replayed. Fields named as in `collect` keep its defaults. */
export const rlBatchConfigSchema = z.strictObject({
  /** Reset seeds per step (each environment plays each `groupSize` times). Default 32. */
  episodesPerStep: asyncCollectorFields.episodesPerBatch,
  /** Episodes per (environment, seed): a group for group-relative estimators. `collect`'s default (1). */
  groupSize: collectFields.groupSize,
  /** Passes over the step's samples (PPO epochs). Default 2. */
  ppoEpochs: z.number().int().positive().default(2),
  /** Samples (turns) per gradient update. Default 64. */
  miniBatchSize: z.number().int().positive().default(64),
  /**
   * Prompt + response tokens of one forward/backward pass at most: each mini-batch is split into micro-batches
   * within this budget and their gradients summed before its one optimizer step, every loss normalised by the
   * mini-batch's counts (verl's `ppo_max_token_len_per_gpu`): the same update, less memory. Default: none (a
   * mini-batch is one pass).
   */
  microBatchTokens: z.number().int().positive().optional(),
  /** Most tokens per response. `collect`'s default (256). */
  maxTokens: generationOptionsSchema.shape.maxTokens,
  /**
   * Sampling temperature of the rollout. Every log-prob of the step (rollout, old, new, reference) and the logged
   * entropy are those of the sampling distribution softmax(logits / T), as verl and TRL divide the logits by it in the
   * training forward. Default 1.
   */
  temperature: z.number().positive().default(1),
  /** Episodes in flight; their requests are batched. `collect`'s default (32). */
  concurrency: collectFields.concurrency,
  /** Requests per `generate` batch. Default 64. */
  maxGenerationBatch: z.number().int().positive().default(64),
  /**
   * Play the rollout on `@ludic/model`'s `GenerationEngine` (continuous batching: each episode's request joins the
   * running rows as soon as its prompt is computed and leaves the step it ends, episodes stepped per trajectory; prompts
   * share computed prefixes): `true` for the engine's defaults (its rows `maxGenerationBatch`), or its options. One
   * engine for the run (one per worker thread with `asyncRollout`), following the weights step to step. Every
   * architecture, GPT-2 included; refused when the trainer is built with a rollout source given to it.
   * Default: false (each turn's requests of the episodes in flight as batches).
   */
  engine: z.union([z.boolean(), generationEngineOptionsSchema.omit({ tokenizer: true })]).default(false),
  /** Episodes still going after this many turns are truncated. `collect`'s default (64). */
  maxTurns: collectFields.maxTurns,
})
export type RlBatchConfig = z.input<typeof rlBatchConfigSchema>

/**
 * Asynchronous collection (RollArc, LlamaRL): rollout workers in `worker_threads`, each with its own backend and
 * a copy of the model, play the next batches while the trainer updates on the current one. The trainer pushes
 * its weights every `pushEvery` steps; a batch played with weights more than `maxStaleness` steps old is not
 * used. The PPO ratio is taken against the current weights' log-probs (recomputed, "proximal") and each token's
 * loss is weighted by the truncated importance ratio min(π_current / π_rollout, `importanceCap`) (decoupled PPO,
 * AReaL; verl's `rollout_is` "token" truncation), which corrects for the stale weights that generated it.
 */
export const asyncRolloutConfigSchema = z.strictObject({
  /**
   * Absolute path or URL of a module exporting `createRolloutSetup(data)` (or a default function) that returns
   * `{ environments, tokenizer, prompt?, chatTemplate? }`: what every worker plays, with the same tokenizer and
   * prompts as the trainer. A TypeScript module is loaded through tsx.
   */
  setupModule: z.union([z.string().min(1), z.instanceof(URL)]),
  /** Given to `createRolloutSetup` (structured-cloned: plain data). */
  setupData: z.unknown().optional(),
  /** Worker threads. The collector's default (1: on 2 cores one generates while the main thread trains). */
  workers: asyncCollectorFields.workers,
  /** Push the weights to the workers every k steps. Default 1. */
  pushEvery: z.number().int().min(1).default(1),
  /** A batch is used only if its weights are at most this many steps old; ≥ pushEvery. The collector's default (1). */
  maxStaleness: asyncCollectorFields.maxStaleness,
  /** Finished batches kept waiting beyond one per worker. The collector's default (0). */
  prefetch: asyncCollectorFields.prefetch,
  /** Truncation of the per-token importance ratio π_current / π_rollout. Default 2. */
  importanceCap: z.number().min(1).default(2),
  /** The workers' backend. Default: the trainer's (`tf.getBackend()`). */
  backend: z.string().min(1).optional(),
  /** Node options of the worker threads. Default: the process's. */
  execArgv: asyncCollectorFields.execArgv,
})
export type AsyncRolloutConfig = z.input<typeof asyncRolloutConfigSchema>

export const klConfigSchema = z.strictObject({
  /** β: the loss gets + β·KL(π_θ ‖ π_ref). */
  coefficient: z.number().positive(),
  /**
   * verl `kl_loss_type`. Default `low_var_kl` (k3). As a loss, k3's gradient is in expectation that of KL(π_ref ‖ π), not
   * of KL(π_θ ‖ π_ref) (Tang & Munos 2025): against a uniform reference it holds every action's probability away from 0,
   * and its regularised equilibrium is further from Nash (`kuhnRegularizedEquilibrium`'s `divergence: 'forward'`).
   * `low_var_kl+` (k3's value, k2's gradient) and `k2` follow KL(π_θ ‖ π_ref). These estimate the KL from the sampled
   * token alone, so their gradient at a move the policy has pushed near probability 0 vanishes with it. `full`
   * (KL(π_θ ‖ π_ref)) and `full-forward` (KL(π_ref ‖ π_θ)) are exact, over the whole vocabulary at every response
   * position (`exactKlEstimators`): the update runs the reference's forward pass beside the policy's on each micro-batch
   * (its head's logits again in the backward pass; no gradient of its own), and `full-forward`'s gradient, β (π − π_ref)
   * at the tempered logits per token, pulls such a move back whether it was sampled or not.
   */
  estimator: klTermEstimatorSchema.default('low_var_kl'),
  /**
   * β's multiplier at each step, a schedule as the learning rate's (`schedule`): `{ type: 'warmup-cosine', totalSteps,
   * minRatio: 0 }` anneals β to 0 by `totalSteps` — a reference (a warmed-up, near-uniform policy) that keeps early play
   * mixed without holding the final policy near it. Default: constant β.
   */
  schedule: scheduleSchema.optional(),
  /**
   * Moves the reference toward the policy every `every` steps: π_ref ← α·π_θ + (1 − α)·π_ref on the weights (TRL's
   * `sync_ref_model`, `ref_model_sync_steps`, `ref_model_mixup_alpha`; TR-DPO, Gorbatovski et al. 2024). α = 1 is a
   * copy: a KL to a reference that catches up with the policy is magnetic mirror descent's moving magnet and R-NaD's
   * regularisation (Sokota et al. 2023, Perolat et al. 2022), under which self-play on a two-player zero-sum game
   * converges to a Nash equilibrium instead of cycling around it. Default: a frozen reference. Not with
   * `asyncRollout` (its workers hold their own reference) nor with LoRA adapters (the reference has no adapters).
   */
  referenceSync: z
    .strictObject({
      /** Steps between syncs (after the update of steps every, 2·every, …). */
      every: z.number().int().positive(),
      /** α: the policy's share of the new reference. Default 1 (a copy). */
      mixupAlpha: z.number().gt(0).max(1).default(1),
    })
    .optional(),
})

/** What `evaluate` sees. */
export interface EvaluationContext {
  /** Updates taken so far (0 before training). */
  step: number
  model: CausalLanguageModel
  tokenizer: TokenizerV1
}
export type EvaluationHook = (context: EvaluationContext) => Promise<Readonly<Record<string, number>>> | Readonly<Record<string, number>>

/**
 * A fixed opponent's `seats`: which role it plays, as weights by role (`{ player0: 3, player1: 1 }`: the first seat in
 * three of its episodes in four), drawn per episode like the rest; a role not named is never its. Every role named
 * must be one of every environment's roles (refused when the trainer is built). Absent: every role alike.
 */
export const opponentSeatsSchema = z
  .record(z.string().min(1), z.number().min(0).finite())
  .refine((seats) => Object.values(seats).some((weight) => weight > 0), 'needs a role with a weight above 0')

export const rlTrainerConfigSchema = z
  .strictObject({
    model: z.instanceof(CausalLanguageModel, { message: 'must be a CausalLanguageModel (createModel, loadModel)' }),
    tokenizer: tokenizerSchema,
    /**
     * Environment factories (several games train together); the policy plays every role (self-play). Not used
     * with `asyncRollout`, whose setup module gives the workers theirs.
     */
    environments: collectFields.environments.optional(),
    /** Any `AdvantageEstimatorV1`. Default: RAE (role-conditioned baselines, SPIRAL). */
    advantage: z
      .custom<AdvantageEstimatorV1>(
        (value) => typeof value === 'object' && value !== null && typeof (value as AdvantageEstimatorV1).estimate === 'function',
        'must be an AdvantageEstimatorV1',
      )
      .optional(),
    /** A policy loss from `createPolicyLoss`. Default: PPO clip (ε 0.2, token mean). */
    policyLoss: functionOf<PolicyLoss>('must be a policy loss function (createPolicyLoss)').optional(),
    /**
     * PPO's critic: per-token values for estimators that need them (GAE: `ppo` is GAE + critic + PPO-clip), trained
     * with the clipped value loss; a separate value model (default) or a head on the policy's trunk. See
     * `criticConfigSchema`. Default: none.
     */
    critic: criticConfigSchema.optional(),
    /** KL to a frozen copy of the starting weights, as a loss term. Default: none. */
    kl: klConfigSchema.optional(),
    /** The loss gets − c·entropy (token mean). Default 0. */
    entropyCoefficient: z.number().min(0).default(0),
    /**
     * Response positions whose token is one of these ids get no entropy bonus (e.g. format tokens and the end
     * token, whose spread only makes moves invalid); the entropy is then the mean over the other positions.
     * Default: none excluded (every response token).
     */
    entropyExcludeTokenIds: z.array(z.number().int().min(0)).optional(),
    /**
     * Recompute each layer's activations in the backward pass instead of keeping them (activation checkpointing,
     * `sequenceLogprobs`' `recomputeLayers`): one more forward pass per update for a much lower peak (measured in
     * the README's "one step" section). Refused with LoRA dropout.
     * Default false.
     */
    recomputeLayers: z.boolean().default(false),
    optimizer: optimizerConfigSchema.prefault({}),
    /** Learning-rate multiplier per trainer step. Default: constant. */
    schedule: scheduleSchema.optional(),
    batch: rlBatchConfigSchema.prefault({}),
    /** The prompt of a turn (rollout's: a `{observation}` template or a function). Default `'{observation}'`. */
    prompt: z.union([z.string(), functionOf<PromptTemplate>('must be a string or a function')]).optional(),
    /** How messages become the prompt text (createLocalPolicy's). Default: the tokenizer's chat template. */
    chatTemplate: z.union([z.string().min(1), functionOf<(messages: readonly ChatMessage[]) => string>('must be a function')]).optional(),
    /**
     * Recompute the old log-probs with a full forward pass of the rollout weights before the update
     * (verl's `old_log_prob`). The rollout's own log-probs come from the KV-cached decode, equal to ~1e-6;
     * recomputing makes the first ratio exactly 1 at the cost of one forward pass. Default true.
     */
    recomputeOldLogprobs: z.boolean().default(true),
    /** Seeds episodes, sampling and mini-batch order. Default 0. */
    seed: z.number().int().default(0),
    /**
     * `trajectories.jsonl` in `runDirectory`: a seeded sample of each step's episodes, one bounded line each (see
     * `trajectoryLogConfigSchema`). Default: on, 4 episodes per step, lines of at most 256 KiB.
     */
    trajectories: trajectoryLogConfigSchema.prefault({}),
    /**
     * `runDirectory` (`metrics.jsonl`, `trajectories.jsonl`, `checkpoint-<step>/`), `loggers` (`'jsonl'`, `'tensorboard'`
     * with the config and one episode's transcript per step as text, `'wandb'`, objects `{ kind, … }`, or your own
     * `RunLoggerV1`), `loggedConfig` (`ludic train`: the run config file's), `checkpointEvery`, `keepLast`, `resume`:
     * every trainer's run fields (`runConfigFields`).
     */
    ...runConfigFields,
    /** Told what the trainer did that is not a metric (a broken checkpoint set aside on resume). Default: `console.warn`. */
    notify: functionOf<(message: string) => void>('must be a function (message) => void').optional(),
    /** Called every `evaluateEvery` steps; its numbers are logged as `eval/<name>`. */
    evaluate: functionOf<EvaluationHook>('must be a function (context) => metrics').optional(),
    evaluateEvery: z.number().int().min(0).default(0),
    /** Only these roles' turns are trained on. Default: every role. */
    trainRoles: z.array(z.string()).min(1).optional(),
    /**
     * Opponents beside self-play (a population, as in league training): in a `share` of the episodes (drawn per
     * episode from the seed and step) one role, drawn likewise, is played by an opponent, and only the model's turns
     * are trained on. An entry is a fixed policy `{ policy, share, seats? }` (e.g. the random player; its id must not be
     * `learnerPolicyId`; `seats` weighs the roles it plays) or, once at most, the pool of the learner's own past snapshots `{ pool: 'snapshots', share,
     * every, keep, sampling, … }` (`snapshotPoolConfigSchema`: a snapshot every `every` steps, `keep` kept, drawn
     * `uniform`ly, by `recency` or by PFSP; its games give PFSP's win rates and the pool's Bradley–Terry ratings in the
     * metrics). Shares add up to at most 1; the rest is pure self-play. Default: none (pure self-play).
     */
    opponents: z
      .array(
        z.discriminatedUnion('pool', [
          z.strictObject({
            pool: z.undefined().optional(),
            policy: policySchema,
            share: z.number().gt(0).max(1),
            seats: opponentSeatsSchema.optional(),
          }),
          snapshotPoolConfigSchema,
        ]),
      )
      .min(1)
      .refine((opponents) => opponents.reduce((total, opponent) => total + opponent.share, 0) <= 1 + 1e-9, 'shares must add up to at most 1')
      .optional(),
    /**
     * Roles played by a fixed policy in every episode (role-play's user simulator: `{ user: simulator }`); their
     * turns are not trained on. Each policy's id must not be `learnerPolicyId`. Default: none.
     */
    rolePolicies: z.record(z.string().min(1), policySchema).optional(),
    /**
     * Scores whole trajectories, a group at a time (CPO's comparative judge, a reward model, a rubric): the
     * trajectories of one group (same environment and seed, `batch.groupSize` of them) are scored together and
     * each trajectory's score is added to every trained role's return (role-play environments return 0, so the
     * score is the reward). Scores must be finite. Its `takeMetrics()` are logged each step. Default: none
     * (environment rewards only).
     */
    scorer: z
      .custom<TrajectoryScorerV1>(
        (value) => typeof value === 'object' && value !== null && typeof (value as TrajectoryScorerV1).score === 'function',
        'must be a TrajectoryScorerV1 (an object with score(group))',
      )
      .optional(),
    /** Collect in worker threads while training (see `asyncRolloutConfigSchema`). Default: synchronous collection. */
    asyncRollout: asyncRolloutConfigSchema.optional(),
    /**
     * RL-PLUS's external data: each step, every group is joined by up to `perGroup` demonstrations replayed through
     * its environment (`replayDemonstrations`); their tokens reach the policy loss as `externalMask` (use
     * `createPolicyLoss('rl-plus')`) and their old log-probs are the current weights'. Default: none (on-policy only).
     */
    externalDemonstrations: externalDemonstrationsConfigSchema.optional(),
  })
  .superRefine((config, context) => {
    const problem = (path: (string | number)[], message: string) => context.addIssue({ code: 'custom', path, message })
    if (config.checkpointEvery > 0 && config.runDirectory === undefined) problem(['runDirectory'], 'is needed with config.checkpointEvery > 0')
    if (config.resume && config.runDirectory === undefined) problem(['runDirectory'], 'is needed with config.resume')
    const pools = (config.opponents ?? []).flatMap((opponent, index) => (opponent.pool === 'snapshots' ? [index] : []))
    if (pools.length > 1) problem(['opponents', pools[1]!], 'is a second snapshot pool: the league has one (give it the sum of the shares)')
    if (pools.length > 0 && config.rolePolicies !== undefined)
      problem(['opponents', pools[0]!], 'a snapshot pool is not supported with config.rolePolicies yet (the league seats every role)')
    config.opponents?.forEach((opponent, index) => {
      if (opponent.pool === 'snapshots') return
      if (pools.length > 0 && /^snapshot-\d+$/.test(opponent.policy.id))
        problem(['opponents', index, 'policy', 'id'], `is a snapshot's policy id ('snapshot-<step>'); beside a snapshot pool a fixed opponent needs another`)
      for (const role of Object.keys(opponent.seats ?? {}))
        if (config.rolePolicies !== undefined && Object.hasOwn(config.rolePolicies, role))
          problem(['opponents', index, 'seats', role], `is a role played by config.rolePolicies in every episode; an opponent never plays it`)
      if (opponent.policy.id === learnerPolicyId)
        problem(
          ['opponents', index, 'policy', 'id'],
          `is the trained model's policy id ('${learnerPolicyId}'); an opponent needs its own (its turns are told apart by id)`,
        )
    })
    for (const [role, policy] of Object.entries(config.rolePolicies ?? {})) {
      if (policy.id === learnerPolicyId)
        problem(['rolePolicies', role, 'id'], `is the trained model's policy id ('${learnerPolicyId}'); a fixed role's policy needs its own id`)
    }
    if (config.rolePolicies !== undefined && config.trainRoles?.some((role) => Object.hasOwn(config.rolePolicies!, role)))
      problem(['trainRoles'], `names a role played by config.rolePolicies (${Object.keys(config.rolePolicies).join(', ')}): those turns are not the model's`)
    if (config.externalDemonstrations !== undefined) {
      for (const name of ['asyncRollout', 'opponents', 'scorer'] as const) {
        if (config[name] !== undefined) problem(['externalDemonstrations'], `are not supported with config.${name} yet`)
      }
    }
    const asyncRollout = config.asyncRollout
    if (asyncRollout === undefined) {
      if (config.environments === undefined) problem(['environments'], 'is needed (or config.asyncRollout, whose setup module gives the environments)')
      return
    }
    for (const name of ['environments', 'prompt', 'chatTemplate'] as const) {
      if (config[name] !== undefined)
        problem([name], 'must not be given with config.asyncRollout: its setup module gives the workers their environments, prompt and chat template')
    }
    if (config.opponents !== undefined) problem(['opponents'], 'are not supported with config.asyncRollout yet (the workers play self-play only)')
    if (config.rolePolicies !== undefined) problem(['rolePolicies'], 'are not supported with config.asyncRollout yet (the workers play self-play only)')
    if (asyncRollout.maxStaleness < asyncRollout.pushEvery) {
      problem(
        ['asyncRollout', 'maxStaleness'],
        `must be at least config.asyncRollout.pushEvery (${asyncRollout.pushEvery}): weights pushed every k steps are up to k steps old`,
      )
    }
  })
export type RlTrainerConfig = z.input<typeof rlTrainerConfigSchema>
export type ParsedRlTrainerConfig = z.output<typeof rlTrainerConfigSchema>
