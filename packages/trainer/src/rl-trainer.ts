import { createRandom, deriveSeed, InvalidArgumentError, LudicError, parseArgument, type AdvantageEstimatorV1, type Random } from '@ludic/core'
import { createRae } from '@ludic/advantages'
import { CausalLanguageModel, checkVocabularyFits, createAdamW, sequenceLogprobs } from '@ludic/model'
import * as tf from '@tensorflow/tfjs-core'
import { createPolicyLoss, isExactKlEstimator } from '@ludic/objectives'
import { buildExperience, rowsIfAny, rowsOf, type Experience } from './experience/experience.js'
import { createCritic, valueStage } from './experience/critic.js'
import { checkBatchNeeds, checkEstimatorNeeds, providedNeeds } from './experience/needs.js'
import { advantageStage, baselineStage, importanceWeights, logprobStage, sequencesOf } from './experience/stages.js'
import { policyUpdateEpochs, type PolicyUpdateSettings } from './experience/update.js'
import { externalTokenMasks, replayDemonstrations, type DemonstrationBatch, type DemonstrationReplaySettings } from './external-demonstrations.js'
import { checkLeagueModel, isPoolConfig, League } from './league/league.js'
import { episodeTranscript } from './loggers/episode-transcript.js'
import { createRunLoggers, plainConfig } from './loggers/run-loggers.js'
import type { StepMetrics } from './metrics-log.js'
import { learnerPolicyId, rlTrainerConfigSchema, type ParsedRlTrainerConfig, type RlTrainerConfig } from './rl-config.js'
import type { JsonValue } from './run-state.js'
import { nodePlatform } from './platform.js'
import { offPolicyMetrics, progressFields, rolloutMetrics } from './rl-metrics.js'
import { createRolloutSource, type RolloutSource, type RolloutSourceContext } from './rollout-source.js'
import { createTrainerSkeleton, trainerWith, type TrainerControls, type TrainerRunOptions, type TrainerUpdate } from './skeleton.js'
import { resolveSchedule } from './schedule.js'
import { scoreRollout } from './scored-rewards.js'
import { raggedOf, responseRows } from './sequences.js'
import { boundedTrajectoryLine, rlTrajectoryRecords, sampledEpisodes, trainedSamplesOf, type RlTrajectoryInput } from './trajectory-records.js'

/**
 * `run`'s options: run until `steps` have been taken in total (a resumed run continues to it). The progress bar's
 * `label` defaults to what the trainer does: `cpo` with a `scorer` (`createCpoTrainer`), `rl` when fixed
 * `rolePolicies` play some roles, else `self-play`.
 */
export type RlRunOptions = TrainerRunOptions & { steps: number }

export interface RlTrainer extends TrainerControls<StepMetrics> {
  /** Steps until `steps` have been taken in total: collect → rewards → advantages → PPO epochs → metrics (→ evaluation, log, checkpoint). */
  run(options: RlRunOptions): Promise<StepMetrics[]>
  /** Runs the evaluation hook now; returns its metrics (prefixed `eval/`). */
  evaluate(): Promise<Record<string, number>>
  /** Closes the loggers and stops the rollout workers of asynchronous collection, if running (`run` does both when it ends). */
  close(): Promise<void>
}

/**
 * Self-play RL (SPIRAL): one policy plays every role of every environment; each role's outcome reward
 * goes through the advantage estimator (RAE by default) and PPO updates the model on the step's samples.
 * Checkpoints hold the weights, the optimizer, the generator, the estimator's state, the step and the
 * metrics, so a resumed run continues exactly (bit for bit) where it stopped.
 */
export interface RlTrainerHooks {
  /**
   * Where the steps' experience comes from instead of the config's synchronous or asynchronous collection, e.g.
   * `(context) => createDisaggregatedRolloutSource(context, adapters, options)`. Default: `config.asyncRollout` decides.
   */
  rolloutSource?: (context: RolloutSourceContext) => RolloutSource
}

export function createRlTrainer(config: RlTrainerConfig, hooks: RlTrainerHooks = {}): RlTrainer {
  const parsed = parseArgument(rlTrainerConfigSchema, config, 'config')
  const notify = parsed.notify ?? ((message: string) => console.warn(`[ludic trainer] ${message}`))
  const defaultLabel =
    parsed.scorer !== undefined ? 'cpo' : parsed.rolePolicies !== undefined && Object.keys(parsed.rolePolicies).length > 0 ? 'rl' : 'self-play'
  const { model, batch, kl, seed } = parsed
  checkVocabularyFits(parsed.tokenizer, model.config)
  // The league of the learner's snapshots, when an opponent is a snapshot pool: refused before anything is made.
  const league = leagueOf(parsed, hooks)
  const estimator = parsed.advantage ?? createRae()
  const schedule = resolveSchedule(parsed.schedule)
  const klSchedule = resolveSchedule(kl?.schedule)
  const { maxGradNorm, learningRate, ...adamW } = parsed.optimizer
  // A shared critic's head joins the policy's parameters before its optimizer is made; a separate critic has its own.
  const critic = parsed.critic === undefined ? undefined : createCritic(model, parsed.critic, parsed.optimizer)
  const parameters = model.trainableParameters()
  const optimizer = createAdamW(parameters, { ...adamW, learningRate })
  // The reference policy for the KL term: a frozen copy of the starting weights.
  const reference = kl === undefined ? undefined : new CausalLanguageModel(model.config, model.parameters())
  const ppo: PolicyUpdateSettings = {
    model,
    parameters,
    optimizer,
    policyLoss: parsed.policyLoss ?? createPolicyLoss('ppo-clip'),
    entropyCoefficient: parsed.entropyCoefficient,
    entropyExcluded: new Set(parsed.entropyExcludeTokenIds ?? []),
    kl: undefined, // the step's β (kl.schedule): set by `update`
    maxGradNorm,
    recomputeLayers: parsed.recomputeLayers,
    microBatchTokens: batch.microBatchTokens,
    temperature: batch.temperature,
    critic,
  }
  let rolloutSource: RolloutSource
  let random: Random = createRandom(deriveSeed('ludic.trainer', seed))
  // The loop, the loggers and the checkpoints: made before the rollout source, so that a logger that cannot work
  // (TensorBoard without a run directory) or another run in the directory is refused before any worker starts.
  const skeleton = createTrainerSkeleton<StepMetrics>({
    name: defaultLabel,
    model,
    optimizer,
    run: parsed,
    plainConfig: () => plainConfig(parsed, rlConfigLeftOut),
    notify,
    reference,
    referenceMoves: kl?.referenceSync !== undefined,
    estimator,
    critic: critic?.own === undefined ? undefined : { parameters: critic.own.parameters, optimizer: critic.own.optimizer },
    update: (stepIndex) => update(stepIndex),
    random: () => random,
    saveState: () => (league === undefined ? null : { league: league.getState() }),
    restoreState(state, restored) {
      random = restored
      if (league !== undefined) league.setState((state as { league?: JsonValue } | null | undefined)?.league)
    },
    progressFields,
    finish: () => rolloutSource.close(),
    dispose() {
      void rolloutSource?.close()
      optimizer.dispose()
      reference?.dispose()
      critic?.dispose()
      league?.dispose()
    },
  })
  try {
    // (`config.asyncRollout`'s worker threads are refused here in the browser entry.)
    if (hooks.rolloutSource !== undefined && parsed.batch.engine !== false) {
      throw new InvalidArgumentError({
        argument: 'config.batch.engine',
        value: parsed.batch.engine,
        message: "is the config's own rollout's: a rollout source given to the trainer generates its own way (drop one of them)",
      })
    }
    rolloutSource = (hooks.rolloutSource ?? createRolloutSource)({ config: parsed, model, reference, league })
    // Refused now, not after a rollout: an off-policy source without recomputed π_old, an estimator's unmet needs.
    refuseUnrunnable(parsed, estimator, { offPolicy: rolloutSource.offPolicy, greedyBaselines: rolloutSource.greedyReturns !== undefined })
  } catch (error) {
    skeleton.dispose()
    throw error
  }
  const run = skeleton.runState
  // The records' `trainer`: the label, with RL-PLUS named when external demonstrations join a run without a scorer.
  const trainerName = parsed.scorer === undefined && parsed.externalDemonstrations !== undefined ? 'rl-plus' : defaultLabel
  // trajectories.jsonl: written when the run has a directory (its sample drawn apart from `random`).
  const trajectoryLog = parsed.runDirectory === undefined || !parsed.trajectories.enabled ? undefined : parsed.trajectories
  async function evaluate(step = skeleton.stepCount): Promise<Record<string, number>> {
    const results = (await parsed.evaluate?.({ step, model, tokenizer: parsed.tokenizer })) ?? {}
    return Object.fromEntries(Object.entries(results).map(([name, value]) => [`eval/${name}`, value]))
  }

  async function update(stepIndex: number): Promise<TrainerUpdate<StepMetrics>> {
    const source = rolloutSource
    const started = performance.now()
    // 1. Collect (seeds depend only on the run's seed and the step).
    const rollout = await source.next(stepIndex)
    const { samples, offPolicy } = rollout
    if (offPolicy !== undefined && !source.offPolicy)
      throw new LudicError('the rollout source gave an off-policy batch but says it is on-policy (RolloutSource.offPolicy): its π_old would be wrong')
    checkBatchNeeds(estimator, samples)
    const rolloutSeconds = (performance.now() - started) / 1000
    // 2. Scores: a scorer's score of each group's trajectories joins the trained roles' returns (CPO).
    const scoreStarted = performance.now()
    const scored = parsed.scorer && (await scoreRollout(parsed.scorer, rollout.trajectories, samples))
    const scoreSeconds = (performance.now() - scoreStarted) / 1000
    const trajectories = scored ? scored.trajectories : rollout.trajectories
    const judgements = scored && trajectoryLog !== undefined ? (parsed.scorer!.takeJudgements?.() ?? []) : []
    // 3. External demonstrations (RL-PLUS) join their groups, replayed through the environments for their rewards.
    const external = parsed.externalDemonstrations && (await replayDemonstrations(demonstrationSettings(parsed), stepIndex, trajectories))
    // 4. The step's experience: every trained sample with its ids and outcome reward, the policy's then the external ones.
    let experience = buildExperience(
      external ? [...trajectories, ...external.trajectories] : trajectories,
      external ? [...samples, ...external.samples] : samples,
      {
        origin: offPolicy === undefined ? { offPolicy: false } : { offPolicy: true, policyVersion: offPolicy.policyVersion },
        externalCount: external?.samples.length ?? 0,
      },
    )
    const updateStarted = performance.now()
    // 5. Log-probs: π_old (recomputed, or the rollout's) and π_ref; how far generation and training agree.
    const logprobs = await logprobStage(experience, {
      model,
      // An exact KL runs the reference in the update itself: the sampled tokens' reference log-probs are not needed.
      reference: kl !== undefined && isExactKlEstimator(kl.estimator) ? undefined : reference,
      recomputeOld: parsed.recomputeOldLogprobs,
      chunkSize: batch.miniBatchSize,
      temperature: batch.temperature,
      referenceLogprobs: offPolicy?.referenceLogprobs,
      valueHead: critic?.kind === 'shared' ? critic.valueHead : undefined,
    })
    experience = logprobs.experience
    // 6. The critic's values V(s_t) of the batch as played (GAE's, and the value loss's clip centre).
    // (A shared critic's come with π_old, from one forward pass.)
    if (critic !== undefined && experience.columns.values === undefined) experience = await valueStage(experience, critic, batch.miniBatchSize)
    // 7. ReMax's baselines: the return of each group's greedy episode, for each role.
    if ((estimator.requires ?? []).includes('baselineRewards')) experience = await baselineStage(experience, await source.greedyReturns!(stepIndex))
    // 8. Advantages (external samples in their groups).
    experience = advantageStage(experience, estimator)
    // The step's sampled episodes as bounded lines, before the update (which reads the same columns).
    const trajectoryLines =
      trajectoryLog &&
      (await trajectoryLinesOf(experience, {
        step: stepIndex + 1,
        policyVersion: offPolicy?.policyVersion ?? stepIndex,
        externalIds: new Set(external ? external.trajectories.map((trajectory) => trajectory.id) : []),
        scoring: scored
          ? { scorer: parsed.scorer!.name, scores: new Map(trajectories.map((trajectory, index) => [trajectory.id, scored.scores[index]!])), judgements }
          : undefined,
      }))
    // 9. An off-policy batch: each token weighted by the truncated importance ratio of the weights that played it.
    const importance = offPolicy && importanceWeights(rowsOf(experience, 'oldLogprobs'), rowsOf(experience, 'rolloutLogprobs'), offPolicy.importanceCap)
    // 10. Policy-update epochs over shuffled mini-batches (micro-batches within the token budget), and the critic's.
    const rate = learningRate * schedule(stepIndex)
    const klTerm = kl && { coefficient: kl.coefficient * klSchedule(stepIndex), estimator: kl.estimator, reference }
    const terms = await policyUpdateEpochs(
      { ...ppo, kl: klTerm },
      {
        sequences: sequencesOf(experience),
        oldLogprobs: rowsOf(experience, 'oldLogprobs'),
        advantages: rowsOf(experience, 'advantages'),
        referenceLogprobs: rowsIfAny(experience, 'referenceLogprobs'),
        importanceWeights: importance?.weights,
        ...(critic === undefined ? {} : { oldValues: rowsOf(experience, 'values'), returns: rowsOf(experience, 'returns') }),
        ...(external
          ? { externalMasks: [...samples.map((sample) => new Uint8Array(sample.responseTokenIds.length)), ...externalTokenMasks(external.samples)] }
          : {}),
      },
      { epochs: batch.ppoEpochs, miniBatchSize: batch.miniBatchSize, learningRate: rate, baseLearningRate: learningRate, random },
    )
    const stepCount = stepIndex + 1
    // 11. `kl.referenceSync`: the reference moves toward the policy every `every` steps.
    if (kl?.referenceSync !== undefined && stepCount % kl.referenceSync.every === 0) syncReference(reference!, model, kl.referenceSync.mixupAlpha)
    const updateSeconds = (performance.now() - updateStarted) / 1000
    await source.updated(stepCount)
    // 5. Metrics (→ evaluation, log, checkpoint).
    const tokensPerSecond =
      samples.reduce((total, sample) => total + sample.responseTokenIds.length, 0) / Math.max(rollout.generationSeconds ?? rolloutSeconds, 1e-9)
    const metrics: StepMetrics = {
      step: stepCount,
      ...rolloutMetrics(trajectories, samples),
      ...(scored && { ...scored.metrics, scoreSeconds }),
      ...terms,
      ...logprobs.metrics,
      learning_rate: rate,
      ...(klTerm === undefined ? {} : { klCoefficient: klTerm.coefficient }),
      tokensPerSecond,
      rolloutSeconds,
      updateSeconds,
    }
    if (external) Object.assign(metrics, externalMetrics(external))
    if (league !== undefined) Object.assign(metrics, league.metrics())
    if (offPolicy !== undefined) Object.assign(metrics, offPolicyMetrics(stepIndex, offPolicy.policyVersion, offPolicy.dropped, importance!, samples))
    if (parsed.evaluateEvery > 0 && stepCount % parsed.evaluateEvery === 0) Object.assign(metrics, await evaluate(stepCount))
    const record = async () => {
      // (With the log off, the first write still drops another run's lines of this step or later.)
      await run.logTrajectories(stepCount, trajectoryLines || [])
      // One episode of the step as text (TensorBoard's `episodes/sample`): the first, so training draws nothing more.
      if (trajectories.length > 0) await run.text('episodes/sample', stepCount, episodeTranscript(trajectories[0]!))
    }
    return { metrics, record }
  }

  /** The lines of the step's sampled episodes; an episode that cannot fit even bare is left out, saying so. */
  async function trajectoryLinesOf(
    experience: Experience,
    step: Pick<RlTrajectoryInput, 'step' | 'policyVersion' | 'externalIds' | 'scoring'>,
  ): Promise<string[]> {
    const { episodesPerStep, maxLineBytes } = trajectoryLog!
    const episodes = sampledEpisodes(experience.trajectories.length, episodesPerStep, seed, step.step)
    // The written trained turns' entropies under the weights the update starts from: a forward pass over them alone.
    let entropies: Map<number, Float32Array> | undefined
    if (trajectoryLog!.entropy) {
      const indices = trainedSamplesOf(experience, episodes)
      const rows = await responseRows(
        indices.map((index) => ({ promptIds: experience.samples[index]!.promptTokenIds, responseIds: experience.samples[index]!.responseTokenIds })),
        batch.miniBatchSize,
        1,
        (chunk) => [sequenceLogprobs(model, raggedOf(chunk), { temperature: batch.temperature, withEntropy: true }).entropies!],
      )
      entropies = new Map(indices.map((index, position) => [index, rows[0]![position]!]))
    }
    const records = rlTrajectoryRecords({ ...step, trainer: trainerName, experience, tokenizer: parsed.tokenizer, episodes, entropies })
    return records.flatMap((record) => {
      const line = boundedTrajectoryLine(record, maxLineBytes)
      if (line === undefined)
        notify(
          `trajectories.jsonl: episode '${record.episode.id}' of step ${record.step} does not fit in ${maxLineBytes} bytes even without its turns; left out`,
        )
      return line === undefined ? [] : [line]
    })
  }

  const trainer = trainerWith(skeleton, {
    optimizer,
    run: ({ label = defaultLabel, ...options }: RlRunOptions) => skeleton.run({ ...options, label }),
    evaluate: () => evaluate(),
  })
  return Object.assign(trainer, {
    async close() {
      await skeleton.close()
      await rolloutSource.close()
    },
  })
}

/** The league of `config.opponents`' snapshot pool, if any: only the config's synchronous collection plays it. */
function leagueOf(parsed: ParsedRlTrainerConfig, hooks: RlTrainerHooks): League | undefined {
  const opponents = parsed.opponents ?? []
  const index = opponents.findIndex(isPoolConfig)
  if (index < 0) return undefined
  if (hooks.rolloutSource !== undefined)
    throw new InvalidArgumentError({
      argument: `config.opponents.${index}`,
      value: opponents[index],
      message: "a snapshot pool is played by the config's synchronous collection only, not by a rollout source of the caller's (hooks.rolloutSource)",
    })
  return new League({
    model: parsed.model,
    tokenizer: parsed.tokenizer,
    chatTemplate: parsed.chatTemplate,
    maxGenerationBatch: parsed.batch.maxGenerationBatch,
    seed: parsed.seed,
    opponents,
    learnerId: learnerPolicyId,
    runDirectory: parsed.runDirectory,
    keepLast: parsed.keepLast,
  })
}

/** What the loggers' record of an RL config leaves out: the model, the data and the parts made in code. */
const rlConfigLeftOut = [
  'model',
  'tokenizer',
  'environments',
  'advantage',
  'policyLoss',
  'opponents',
  'rolePolicies',
  'scorer',
  'externalDemonstrations',
  'notify',
  'evaluate',
  'loggers',
  'loggedConfig',
]

/** The replay settings of `config.externalDemonstrations` (synchronous collection: `config.environments` is set). */
function demonstrationSettings(config: ParsedRlTrainerConfig): DemonstrationReplaySettings {
  const { externalDemonstrations, batch } = config
  return {
    demonstrations: externalDemonstrations!.demonstrations,
    perGroup: externalDemonstrations!.perGroup,
    environments: config.environments!,
    tokenizer: config.tokenizer,
    chatTemplate: config.chatTemplate,
    prompt: config.prompt,
    maxTurns: batch.maxTurns,
    maxTokens: batch.maxTokens,
    trainRoles: config.trainRoles,
    rolePolicies: config.rolePolicies,
  }
}

/** How many external samples and episodes joined the step, and their mean return per trained role. */
function externalMetrics({ trajectories, samples }: DemonstrationBatch): Record<string, number> {
  const returns = trajectories.flatMap((trajectory) =>
    samples.filter((sample) => sample.trajectoryId === trajectory.id).map((sample) => trajectory.returns[sample.role] ?? 0),
  )
  return {
    'external/episodes': trajectories.length,
    'external/samples': samples.length,
    'external/reward': returns.length === 0 ? 0 : returns.reduce((total, value) => total + value, 0) / returns.length,
  }
}

/**
 * Whether every environment of the config gives state keys, found by making one of each and resetting it (its first
 * turn's view says); undefined when the environments are made elsewhere (asynchronous workers' setup module).
 */
/**
 * What `createRlTrainer` refuses in `config` with the config's own rollout source (synchronous, or `asyncRollout`'s
 * workers), checked without making anything: for a caller with work to do before it builds the trainer (`ludic
 * train`'s warm-up), so that a config that cannot run fails before that work, with the trainer's own message.
 */
export function checkRlTrainerConfig(config: RlTrainerConfig): void {
  const parsed = parseArgument(rlTrainerConfigSchema, config, 'config')
  // The browser entry's refusals of what needs Node, in the trainer's order: the run directory, the loggers, the workers.
  if (parsed.runDirectory !== undefined) nodePlatform('config.runDirectory', parsed.runDirectory)
  parsed.opponents?.forEach((opponent, index) => {
    if (isPoolConfig(opponent)) checkLeagueModel(parsed.model, opponent, `config.opponents.${index}`)
  })
  // Loggers that cannot work (online W&B without an API key): made and dropped (they open nothing until started).
  createRunLoggers({ loggers: parsed.loggers, directory: parsed.runDirectory, trainer: 'rl', config: {}, notify: () => {} })
  // The synchronous source is on-policy and plays greedy baselines; asynchronous workers are off-policy and do not.
  const asynchronous = parsed.asyncRollout !== undefined
  if (asynchronous) nodePlatform('config.asyncRollout', parsed.asyncRollout)
  refuseUnrunnable(parsed, parsed.advantage ?? createRae(), { offPolicy: asynchronous, greedyBaselines: !asynchronous })
}

/**
 * `kl.referenceSync`: π_ref ← α·π_θ + (1 − α)·π_ref, weight by weight (new tensors: the optimizer may update the
 * policy's in place).
 */
function syncReference(reference: CausalLanguageModel, model: CausalLanguageModel, alpha: number): void {
  const policy = model.parameters()
  for (const [name, weight] of reference.parameters()) {
    const source = policy.get(name)!
    tf.tidy(() => weight.assign(alpha === 1 ? tf.mul(source, 1) : tf.add(tf.mul(source, alpha), tf.mul(weight, 1 - alpha))))
  }
}

/**
 * An off-policy source without recomputed π_old, an estimator whose needs the source and the config do not meet, a
 * moving KL reference the source or the model cannot follow.
 */
function refuseUnrunnable(parsed: ParsedRlTrainerConfig, estimator: AdvantageEstimatorV1, source: { offPolicy: boolean; greedyBaselines: boolean }): void {
  const sync = parsed.kl?.referenceSync
  if (sync !== undefined && source.offPolicy) {
    throw new InvalidArgumentError({
      argument: 'config.kl.referenceSync',
      value: sync,
      message:
        "is not supported with an off-policy rollout source (asynchronous workers, generation servers): they compute the reference's log-probs with a reference of their own, which would not move",
    })
  }
  if (sync !== undefined && parsed.model.linearAdapters().size > 0) {
    throw new InvalidArgumentError({
      argument: 'config.kl.referenceSync',
      value: sync,
      message:
        'is not supported with LoRA adapters: the reference is the base weights, which the adapters leave unchanged (merge the adapters, or drop referenceSync)',
    })
  }
  if (source.offPolicy && !parsed.recomputeOldLogprobs) {
    throw new InvalidArgumentError({
      argument: 'config.recomputeOldLogprobs',
      value: false,
      message:
        "must be true with an off-policy rollout source (asynchronous workers, generation servers): the importance ratio needs the current weights' log-probs",
    })
  }
  checkEstimatorNeeds(
    estimator,
    providedNeeds(estimator, { critic: parsed.critic !== undefined, greedyBaselines: source.greedyBaselines, stateKeys: () => environmentStateKeys(parsed) }),
  )
  checkOpponentSeats(parsed)
}

/** An opponent's `seats` name only roles every environment has (one of each made to read its roles). */
function checkOpponentSeats(config: ParsedRlTrainerConfig): void {
  const weighed = (config.opponents ?? []).flatMap((opponent, index) =>
    !isPoolConfig(opponent) && opponent.seats !== undefined ? [{ seats: opponent.seats, index }] : [],
  )
  if (weighed.length === 0 || config.environments === undefined) return
  const roleSets = config.environments.map((factory) => factory().roles)
  for (const { seats, index } of weighed)
    for (const role of Object.keys(seats)) {
      const without = roleSets.findIndex((roles) => !roles.includes(role))
      if (without >= 0)
        throw new InvalidArgumentError({
          argument: `config.opponents.${index}.seats.${role}`,
          value: seats[role],
          message: `names a role environment ${without} does not have (its roles: ${roleSets[without]!.join(', ')})`,
        })
    }
}

function environmentStateKeys(config: ParsedRlTrainerConfig): boolean | undefined {
  if (config.environments === undefined) return undefined
  return config.environments.every((factory) => typeof factory().reset(0).stateKey === 'string')
}
