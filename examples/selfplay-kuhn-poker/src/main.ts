/**
 * Self-play on Kuhn Poker (SPIRAL, on a model made from scratch): train a byte-level BPE on the game's
 * text, create a `tiny` transformer, warm it up on random legal play (SFT) so its moves are legal, then
 * let it play against itself with role-conditioned advantages (RAE) and PPO. Exploitability is exact
 * (`kuhnPolicyOf`: every legal move scored by its log-probability at each of the 12 information states).
 */
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { advantageEstimators, createRae, raeOptionsSchema } from '@ludic/advantages'
import { InvalidArgumentError, parseArgument, type AdvantageEstimatorV1, type TurnView } from '@ludic/core'
import {
  createKuhnPoker,
  createRandomPolicy,
  evaluationInvalidRewards,
  kuhnAveragePolicy,
  kuhnBestResponse,
  kuhnExploitability,
  kuhnConstantPolicy,
  kuhnMatch,
  kuhnNashPolicy,
  type KuhnMatch,
  type KuhnPolicy,
} from '@ludic/games'
import { type CausalLanguageModel, createLocalPolicy, createModel, latestCheckpoint, loadModel, saveModel } from '@ludic/model'
import { evaluationMetrics, runExampleMain, type ExampleReport } from '@ludic/report'
import { checkRlTrainerConfig, createRlTrainer, evaluateAgainst, warmUp, type RlTrainerConfig } from '@ludic/trainer'
import { exampleOptionsSchema, startExampleRun } from '@ludic/trainer/example'
import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { chatTemplate, exploitabilityOf, kuhnOptions, policyExamples, promptOf, randomPlayExamples, trainKuhnTokenizer } from './kuhn-setup.js'
import type { KuhnRolloutData } from './rollout-setup.js'

/**
 * The shared example options (`exampleOptionsSchema`: steps, warm-up, batch, learning rates, KL, evaluations, run)
 * with this example's defaults, and its own.
 */
export const mainOptionsSchema = exampleOptionsSchema({ sftSteps: 40, klCoefficient: 0.2, evaluationEpisodes: 200, vocabSize: 320, checkpointEvery: 5 }).extend(
  {
    /** Episodes per deal (the trainer's `batch.groupSize`): each step plays `episodesPerStep × groupSize` episodes. RLOO and GRPO need > 1. */
    groupSize: z.number().int().positive().default(1),
    /**
     * Any `AdvantageEstimatorV1` (`createRloo()`, your own…), or a registered name (`--advantage rloo` on the
     * command line: `advantageEstimators.create(name)`). Default: `createRae()`. The report stores its name only.
     */
    advantage: z
      .union([
        z.custom<AdvantageEstimatorV1>(
          (value) => typeof value === 'object' && value !== null && typeof (value as AdvantageEstimatorV1).estimate === 'function',
          'must be an AdvantageEstimatorV1',
        ),
        z.string().min(1),
      ])
      .default(() => createRae()),
    /**
     * The default estimator with one baseline per information state (RAE's `perState`, keyed by the game's `stateKey`: the round,
     * the seat, its card and the bets so far), so that a decision is judged against its own state's value rather than
     * the average hand's (the card's luck out of the advantage). With `advantage` `rae` (the default) only: refused with
     * another. Default false.
     */
    raePerState: raeOptionsSchema.shape.perState.unwrap().default(false),
    /**
     * PPO's critic (`config.critic`): `separate` (a value model of its own) or `shared` (a value head on the policy's
     * trunk); `none`. Estimators that need values (`--advantage gae`) get a separate one when none is named. Default:
     * none.
     */
    critic: z.enum(['none', 'separate', 'shared']).default('none'),
    /** The critic's learning rate (a separate critic). Default: the policy's. */
    criticLearningRate: z.number().positive().optional(),
    /** The loss gets − c·entropy (token mean). Default 0: the bonus spreads mass over the whole vocabulary (invalid moves); the KL keeps the policy mixed. */
    entropyCoefficient: z.number().min(0).default(0),
    /** The entropy bonus (if any) acts on the move tokens only: the format tokens (`]`, the end token) get none. */
    entropyOnMovesOnly: z.boolean().default(true),
    /** Learning-rate multiplier reached at the last step, by a cosine from 1. 1: constant. */
    finalLearningRateRatio: z.number().min(0).max(1).default(0.1),
    /** Where the cosine decay starts, as a fraction of the steps (constant before). */
    decayFrom: z.number().min(0).max(1).default(0),
    /** The training game's reward for an invalid move (the opponent gets +0.5); below −2, the most a hand can lose. */
    invalidPenalty: z.number().max(0).default(-3),
    /**
     * Rollout worker threads for asynchronous collection (0: synchronous). With 1, a worker with its own backend
     * and a copy of the model plays the next step's episodes while the main thread trains (weights pushed every
     * step, batches at most one step old, the loss weighted by truncated importance ratios).
     */
    asyncWorkers: z.number().int().min(0).default(0),
    /**
     * The report's average policy (`kuhnAveragePolicy`, fictitious play's and NFSP's average strategy) averages the
     * policies evaluated (and read, `averageEvery`) from this fraction of the steps on, one weight each: self-play's last iterate cycles around
     * the equilibrium while the average settles. Default 0.5 (with 100 steps, evaluated every 10: steps 50–100).
     */
    averageFrom: z.number().min(0).max(1).default(0.5),
    /**
     * Steps between readings of the policy for the average: every this many steps the model's exact tabular policy is
     * read (`exploitabilityOf`: the 12 decisions scored, no game played) — between `evaluateEvery`'s evaluations, which
     * also play `evaluationEpisodes` games against the random player. The average (`averageFrom`) takes the readings and
     * the evaluations alike, so the matches can be rare without thinning the average (a reading costs no game; the
     * README measures it). Must divide `evaluateEvery`. Default: `evaluateEvery` (the evaluations only).
     */
    averageEvery: z.number().int().positive().optional(),
    /**
     * After self-play, fine-tune the model on the average policy (`policyExamples`: its move frequencies at each
     * decision) for this many updates, so the model itself plays the average (NFSP's average network, here distilled
     * once at the end); the report's `distilled` is measured after it. 0 (the default): no distillation.
     */
    distilSteps: z.number().int().min(0).default(0),
    /** Examples per decision for the distillation (the average's probabilities to 1/k). Default 200. */
    distilExamplesPerDecision: z.number().int().positive().max(10_000).default(200),
    /** The distillation's learning rate (a cosine to a tenth of it over `distilSteps`). Default 5e-4. */
    distilLearningRate: z.number().positive().default(5e-4),
    /**
     * Rounds of self-play (R-NaD's outer loop, Perolat et al. 2021): each round after the first starts from the previous
     * round's average policy, distilled into the model (`distilSteps` > 0), and keeps a KL to it — the reference moves
     * to the average once a round, so the KL's floor moves with it toward the equilibrium, where a KL to the warmed-up
     * (uniform) play holds the policy at a fixed distance (the README's measurements). Each round averages its own
     * evaluations (and readings) from `averageFrom` of its steps on. Default 1: one round, as before.
     */
    rounds: z.number().int().positive().max(100).default(1),
    /** Self-play steps of each round after the first. Default: `steps`. */
    roundSteps: z.number().int().positive().optional(),
    /** β of the KL to each later round's reference (constant over the round). Default: `klCoefficient`. */
    roundKlCoefficient: z.number().positive().optional(),
    /** The learning rate of each later round (a cosine to `finalLearningRateRatio` of it over the round). Default: `learningRate`. */
    roundLearningRate: z.number().positive().optional(),
    /**
     * Steps of each later round over which the learning rate rises linearly from 0 (its optimizer starts afresh, and
     * Adam's first steps move every weight by about the learning rate). Default 0.
     */
    roundWarmupSteps: z.number().int().min(0).optional(),
    /**
     * Episodes per step of each later round (each deal played `groupSize` times). Once the policy reads its card, a
     * step's gradient is likely mostly the deals' and the opponent's luck (a decision's value gaps near the equilibrium
     * are a tenth of a chip, its returns ±1–2): more episodes a step average it out, at the games' cost only when
     * `roundMiniBatchSize` grows with them (a mini-batch's repeated moves run through the model once; the README measures
     * both). Default: `episodesPerStep`.
     */
    roundEpisodesPerStep: z.number().int().positive().max(4096).optional(),
    /** The PPO mini-batch size (samples) of each later round. Default: `miniBatchSize`. */
    roundMiniBatchSize: z.number().int().positive().max(4096).optional(),
    /**
     * What each later round distils into the next round's reference and the report takes as the run's average: `own`,
     * the round's own evaluations and readings (from `averageFrom` of its steps on); `running`, those of every round after the
     * first, its own included (fictitious play's average over the rounds: a round's last iterate errs one way, the
     * next round's another, and their average can be nearer the equilibrium than either; the README's "Rounds" has
     * the measurements).
     * Round 1 (its reference the warmed-up, uniform play) is left out of the running average. `running-last`: the
     * rounds distil their own averages as with `own` (so their references are those), but the last distils the
     * running one — the run ends on the average over its rounds. Default `own`.
     */
    roundAverage: z.enum(['own', 'running', 'running-last']).default('own'),
    /**
     * Keeps each later round's reference off the simplex's edges: the average a round distils for the next round to
     * start from and keep its KL to has every move's probability clipped to [floor, 1 − floor] (the last round's, the
     * run's product, is distilled as it is). Kuhn Poker's equilibria form a line (P1 bets a K with 3α, α ∈ [0, 1/3]);
     * where a round's average reaches its end (a K always bet), P1 never checks a K, so P2's bet with a Q after a check
     * goes unpunished and drifts, and the policy, near probability 1, likely has too little gradient to come back; a
     * reference a floor inside the edge starts each round there and keeps its KL there (the README measures what it
     * did). Default: none.
     */
    roundReferenceFloor: z.number().positive().lt(0.5).optional(),
  },
)
export type MainOptions = z.input<typeof mainOptionsSchema>

/** The model's policy at a step: exact, from its 12 decisions' scores (`exploitabilityOf`). */
export interface PolicyReading {
  step: number
  exploitability: number
  /** The model's tabular policy (`exploitabilityOf`): P(bet or call) at each of the 12 decisions. */
  policy: KuhnPolicy
}

/** A reading of the policy and the match against the uniform random player (`evaluationEpisodes` games, seats alternating). */
export interface Evaluation extends PolicyReading {
  winRate: number
  meanChips: number
  invalidRate: number
}

/** An evaluation, or (`averageEvery`) a reading of the policy between two (no `winRate`): `isEvaluation` tells them apart. */
export type Reading = Evaluation | PolicyReading

/**
 * What the results against the uniform random player approach as exploitability falls, exactly (`kuhnMatch`): Nash
 * play does not exploit random play fully. It wins 11/24 (α = 0) to 1/2 (α = 1/3) of the rounds, +1/9 to +1/6 chips,
 * where the best response to random play wins 11/16, +11/24: a model nearing equilibrium wins *fewer* rounds against
 * random than an exploiter would, so its win rate can fall while its exploitability falls.
 */
export function randomPlayReference(): { nash: [KuhnMatch, KuhnMatch]; bestResponse: KuhnMatch } {
  const uniform = kuhnConstantPolicy(0.5)
  return {
    nash: [kuhnMatch(kuhnNashPolicy(0), uniform), kuhnMatch(kuhnNashPolicy(1 / 3), uniform)],
    bestResponse: kuhnMatch(kuhnBestResponse(uniform), uniform),
  }
}

/**
 * `report.json`: the options, every evaluation, the exploitability of uniform play, and what Nash play and the best
 * response win against random play (`randomPlayReference`), for reference.
 */
export type Report = Omit<ExampleReport<Evaluation>, 'evaluations'> & {
  /** Before, every `evaluateEvery` steps (with `averageEvery`, the policy's readings between), after. */
  evaluations: Reading[]
  /**
   * The average (`kuhnAveragePolicy`) of the policies evaluated or read at `fromStep` and after (`evaluations` of them), and its
   * exact exploitability: what the iterates' play averages to. With `roundAverage` `running` (or `running-last`), of each round in `rounds`
   * from its own `averageFrom` on (`fromStep` the first round's).
   */
  average: {
    fromStep: number
    evaluations: number
    exploitability: number
    policy: KuhnPolicy
    /** With `roundAverage` `running` (`running-last`: the last round): the rounds averaged (each from `averageFrom` of its steps on; `fromStep` the first's). */
    rounds?: number[]
  }
  /** With `distilSteps` > 0: the model after it was fine-tuned on the average policy, evaluated as `after` is. */
  distilled?: Evaluation & { seconds: number }
  /** With `rounds` > 1: each round's steps (`fromStep` exclusive … `toStep`), its average and its distilled model. */
  rounds?: RoundResult[]
  uniformExploitability: number
  againstRandom: ReturnType<typeof randomPlayReference>
  tensorsLeftBeforeModelDispose: number
}

/** One round of self-play (`rounds`): its evaluations and readings (steps counted across rounds), their average, the distilled model. */
export interface RoundResult {
  round: number
  fromStep: number
  toStep: number
  evaluations: Reading[]
  /** What the round distils (its own average, or the running one: every later round with `roundAverage` `running`, the last with `running-last`). */
  average: Report['average']
  /** With `roundAverage` `running` (`running-last`: the last round): the round's own average. */
  own?: Report['average']
  distilled?: Evaluation & { seconds: number }
}

export async function main(options: MainOptions = {}): Promise<Report> {
  const parsed = parseArgument(mainOptionsSchema, options, 'options')
  const { log, seed } = parsed
  if (parsed.raePerState && options.advantage !== undefined && options.advantage !== 'rae')
    throw new InvalidArgumentError({ argument: 'options.raePerState', value: true, message: "is RAE's option: it needs advantage 'rae' (the default)" })
  const advantage = parsed.raePerState
    ? createRae({ perState: true })
    : typeof parsed.advantage === 'string'
      ? advantageEstimators.create(parsed.advantage)
      : parsed.advantage
  if (parsed.rounds > 1 && parsed.distilSteps === 0)
    throw new InvalidArgumentError({
      argument: 'options.rounds',
      value: parsed.rounds,
      message: "needs distilSteps > 0: each round starts from the previous round's average, distilled into the model",
    })
  if (parsed.rounds > 1 && parsed.klCoefficient === 0 && parsed.roundKlCoefficient === undefined)
    throw new InvalidArgumentError({
      argument: 'options.rounds',
      value: parsed.rounds,
      message: "needs a KL to each round's reference: klCoefficient or roundKlCoefficient > 0",
    })
  if (parsed.rounds > 1 && parsed.asyncWorkers > 0)
    throw new InvalidArgumentError({
      argument: 'options.rounds',
      value: parsed.rounds,
      message: 'is not supported with asyncWorkers: each round needs a trainer with a new KL reference',
    })
  if (parsed.rounds > 1 && parsed.klReferenceEvery > 0)
    throw new InvalidArgumentError({
      argument: 'options.klReferenceEvery',
      value: parsed.klReferenceEvery,
      message: "is not supported with rounds: each later round's reference is the last round's distilled average, which a moving reference would leave",
    })
  if (parsed.averageEvery !== undefined && parsed.evaluateEvery % parsed.averageEvery !== 0)
    throw new InvalidArgumentError({
      argument: 'options.averageEvery',
      value: parsed.averageEvery,
      message: `must divide evaluateEvery (${parsed.evaluateEvery}): the policy's readings fall between the evaluations`,
    })
  if (parsed.rounds === 1) {
    if (parsed.roundAverage !== 'own')
      throw new InvalidArgumentError({
        argument: 'options.roundAverage',
        value: parsed.roundAverage,
        message: 'is for the rounds after the first: it needs rounds > 1',
      })
    for (const name of [
      'roundSteps',
      'roundKlCoefficient',
      'roundLearningRate',
      'roundWarmupSteps',
      'roundEpisodesPerStep',
      'roundMiniBatchSize',
      'roundReferenceFloor',
    ] as const) {
      if (parsed[name] !== undefined)
        throw new InvalidArgumentError({ argument: `options.${name}`, value: parsed[name], message: 'is for the rounds after the first: it needs rounds > 1' })
    }
  }
  const criticModel = parsed.critic !== 'none' ? parsed.critic : (advantage.requires ?? []).includes('values') ? 'separate' : undefined
  const run = await startExampleRun(new URL('..', import.meta.url), parsed)
  const later = laterRounds(parsed)
  await checkRoundSettings(run.runDirectory, roundSettings(parsed, later, advantage.name), parsed)

  // 1. A tokenizer trained on game text, and a tiny model from scratch.
  const tokenizer = trainKuhnTokenizer(parsed.vocabSize)
  const model = createModel('tiny', { vocabSize: tokenizer.vocabSize, seed })
  // A cosine from 1 (from `decayFrom` of a round's steps on) to `finalLearningRateRatio` at its last step.
  const learningRateSchedule = (steps: number) =>
    ({
      type: 'warmup-cosine',
      holdSteps: Math.floor(steps * parsed.decayFrom),
      totalSteps: Math.max(1, steps - 1),
      minRatio: parsed.finalLearningRateRatio,
    }) as const
  const learner = createLocalPolicy({ model, tokenizer, chatTemplate, maxBatch: 256, seed, id: 'learner' })
  const readPolicy = async (step: number): Promise<PolicyReading> => ({ step, ...(await exploitabilityOf(model, tokenizer)) })
  const evaluate = async (step: number): Promise<Evaluation> => {
    const { exploitability, policy } = await readPolicy(step)
    // Against the uniform random player, seats alternating, sampled at temperature 1, an invalid move counted as a loss.
    const match = await evaluateAgainst({
      learner,
      opponent: createRandomPolicy({ seed: seed + 1 + step }),
      environments: [() => createKuhnPoker({ ...kuhnOptions, ...evaluationInvalidRewards })],
      episodes: parsed.evaluationEpisodes,
      seed: seed + 1 + step,
      prompt: (view) => promptOf(view),
      generation: { maxTokens: 8, temperature: 1 },
    })
    return { step, exploitability, policy, winRate: match.winRate, meanChips: match.meanReward, invalidRate: match.invalidRate }
  }

  // The self-play trainer's config, checked before the warm-up (an estimator whose needs it does not meet is refused now).
  const config: RlTrainerConfig = {
    model,
    tokenizer,
    ...(parsed.asyncWorkers === 0
      ? {
          environments: [() => createKuhnPoker({ ...kuhnOptions, invalidPenalty: parsed.invalidPenalty })],
          prompt: (view: TurnView) => promptOf(view),
          chatTemplate,
        }
      : {
          // The workers build the same game, tokenizer, prompt and chat template from this module.
          asyncRollout: {
            setupModule: fileURLToPath(new URL('./rollout-setup.ts', import.meta.url)),
            setupData: { vocabSize: parsed.vocabSize, invalidPenalty: parsed.invalidPenalty } satisfies KuhnRolloutData,
            workers: parsed.asyncWorkers,
          },
        }),
    ...run.trainerConfig({ maxTokens: 8, groupSize: parsed.groupSize, evaluate }),
    // With `averageEvery`, the trainer's hook runs every `averageEvery` steps and plays the match every `evaluateEvery`.
    ...(parsed.averageEvery === undefined
      ? {}
      : {
          evaluateEvery: parsed.averageEvery,
          evaluate: async ({ step }: { step: number }) => evaluationMetrics(step % parsed.evaluateEvery === 0 ? await evaluate(step) : await readPolicy(step)),
        }),
    advantage,
    ...(criticModel === undefined
      ? {}
      : { critic: { model: criticModel, ...(parsed.criticLearningRate === undefined ? {} : { optimizer: { learningRate: parsed.criticLearningRate } }) } }),
    entropyCoefficient: parsed.entropyCoefficient,
    ...(parsed.entropyOnMovesOnly ? { entropyExcludeTokenIds: formatTokenIds(tokenizer) } : {}),
    schedule: learningRateSchedule(parsed.steps),
  }
  checkRlTrainerConfig(config)
  const roundConfig = (round: number, directory: string, resume: boolean, steps: number): RlTrainerConfig => ({
    ...config,
    seed: seed + 1000 * round,
    runDirectory: directory,
    resume,
    kl: { ...config.kl, coefficient: later.roundKlCoefficient, schedule: undefined },
    optimizer: { ...config.optimizer, learningRate: later.roundLearningRate },
    schedule: { ...learningRateSchedule(steps), warmupSteps: later.roundWarmupSteps },
    batch: {
      ...config.batch!,
      episodesPerStep: later.roundEpisodesPerStep,
      miniBatchSize: later.roundMiniBatchSize,
    },
  })
  if (parsed.rounds > 1) checkRlTrainerConfig(roundConfig(2, join(run.runDirectory, 'round-2'), false, later.roundSteps))

  // 2. SFT warm-up on random legal play, so the moves are legal; then "before" is measured.
  const before = await run.beforeTraining(async () => {
    const warmUp = await run.warmUp({ model, tokenizer, examples: randomPlayExamples(), batchSize: 24 })
    log(`sft: ${parsed.sftSteps} steps, nll ${warmUp.nll?.toFixed(3) ?? 'n/a'}`)
    return evaluate(0)
  })
  log(`before self-play: exploitability ${before.exploitability.toFixed(3)}, win rate vs random ${pct(before.winRate)}, invalid ${pct(before.invalidRate)}`)

  // 3. Self-play with RAE and PPO; evaluations every few steps; the average of the evaluated (and read) policies, distilled (NFSP's
  // average network); with rounds, again from that average with a KL to it (R-NaD's outer loop).
  const distil = async (policy: KuhnPolicy, step: number) => {
    const { seconds } = await warmUp({
      model,
      tokenizer,
      examples: policyExamples(policy, parsed.distilExamplesPerDecision),
      batchSize: 64,
      steps: parsed.distilSteps,
      learningRate: parsed.distilLearningRate,
      schedule: { type: 'warmup-cosine', totalSteps: parsed.distilSteps, minRatio: 0.1 },
      seed,
      progress: parsed.progress,
    })
    const result = { ...(await evaluate(step)), seconds }
    log(`distilled the average into the model (${parsed.distilSteps} updates, ${seconds.toFixed(0)} s): exploitability ${result.exploitability.toFixed(3)}`)
    return result
  }
  const averageOf = (evaluated: Reading[], fromStep: number): Report['average'] => {
    const chosen = evaluated.filter((evaluation) => evaluation.step >= fromStep)
    const policy = kuhnAveragePolicy(chosen.map((evaluation) => evaluation.policy))
    return { fromStep, evaluations: chosen.length, exploitability: kuhnExploitability(policy).exploitability, policy }
  }
  // Every given round's own share (its evaluations and readings from its own average's `fromStep` on), averaged as one (all of them
  // from the first round's `fromStep` on, the later rounds' steps being larger).
  const runningAverage = (averaged: Pick<RoundResult, 'round' | 'evaluations' | 'average' | 'own'>[]): Report['average'] => {
    const share = (entry: (typeof averaged)[number]) => (entry.own ?? entry.average).fromStep
    const chosen = averaged.flatMap((entry) => entry.evaluations.filter((evaluation) => evaluation.step >= share(entry)))
    return { ...averageOf(chosen, share(averaged[0]!)), rounds: averaged.map((entry) => entry.round) }
  }
  const rounds: SavedRound[] = []
  let evaluations: Reading[] = []
  let after: Evaluation | undefined
  for (let round = 1; round <= parsed.rounds; round++) {
    const steps = round === 1 ? parsed.steps : later.roundSteps
    const fromStep = rounds.at(-1)?.toStep ?? 0
    const directory = round === 1 ? run.runDirectory : join(run.runDirectory, `round-${round}`)
    const saved = parsed.rounds > 1 ? await readRound(directory) : undefined
    if (saved !== undefined) {
      // A finished round of a resumed run.
      rounds.push(saved)
      evaluations.push(...saved.evaluations)
      const last = saved.evaluations.at(-1)
      // A round ends on a full evaluation (its last step's), as `round.json` saves it.
      if (last === undefined || !isEvaluation(last))
        throw new InvalidArgumentError({
          argument: 'options.runDirectory',
          value: run.runDirectory,
          message: `cannot resume: ${join(directory, 'round.json')} does not end on a full evaluation`,
        })
      after = last
      continue
    }
    const resuming = (await latestCheckpoint(directory)) !== undefined
    // A later round without a checkpoint starts from the previous round's distilled average (the trainer restores it
    // from a checkpoint otherwise, and the KL's reference from `reference/`).
    // The estimator's state (RAE's baselines) carries over from round to round; restored likewise. What a round killed
    // before its first checkpoint left (its reference, metrics) is removed: the round starts again.
    if (round > 1 && !resuming) {
      const previous = rounds.at(-1)!
      await rm(directory, { recursive: true, force: true })
      await restoreWeights(model, join(previous.directory, 'distilled'))
      try {
        if (previous.estimatorState !== undefined) advantage.setState?.(previous.estimatorState)
      } catch (error) {
        throw new InvalidArgumentError({
          argument: 'options.runDirectory',
          value: run.runDirectory,
          message: `cannot resume round ${round}: the estimator state round ${previous.round} saved does not fit ${advantage.name} (${(error as Error).message})`,
        })
      }
    }
    const trainer = createRlTrainer(round === 1 ? config : roundConfig(round, directory, resuming, steps))
    await trainer.run({ steps, progress: parsed.progress })
    // The round's evaluations, its last step's included (`before` heads them: round 1's own), on steps counted across rounds.
    const evaluated = await run.evaluations<Reading>(before, trainer, evaluate)
    // With `averageEvery`, the last step's may be a reading: the round ends on a full evaluation of that step.
    const last = isEvaluation(evaluated.after) ? evaluated.after : await evaluate(trainer.stepCount)
    evaluated.evaluations[evaluated.evaluations.length - 1] = last
    const shifted = <T extends Reading>(evaluation: T): T => (round === 1 ? evaluation : { ...evaluation, step: evaluation.step + fromStep })
    const roundEvaluations = (round === 1 ? evaluated.evaluations : evaluated.evaluations.slice(1)).map(shifted)
    after = shifted(last)
    trainer.dispose()
    evaluations = [...evaluations, ...roundEvaluations]
    const toStep = fromStep + trainer.stepCount
    const own = averageOf(roundEvaluations, fromStep + Math.round(parsed.averageFrom * trainer.stepCount))
    log(
      `${parsed.rounds > 1 ? `round ${round}: ` : ''}average of the ${own.evaluations} policies evaluated from step ${own.fromStep}: exploitability ${own.exploitability.toFixed(3)}`,
    )
    const runs = round > 1 && (parsed.roundAverage === 'running' || (parsed.roundAverage === 'running-last' && round === parsed.rounds))
    const running = runs ? runningAverage([...rounds.slice(1), { round, evaluations: roundEvaluations, average: own }]) : undefined
    if (running !== undefined)
      log(
        `round ${round}: running average of rounds ${running.rounds!.join(', ')} (${running.evaluations} policies): exploitability ${running.exploitability.toFixed(3)}`,
      )
    const average = running ?? own
    // What the next round starts from and keeps its KL to: the average, its moves clipped to `roundReferenceFloor`.
    const floor = round < parsed.rounds ? parsed.roundReferenceFloor : undefined
    const target = floor === undefined ? average.policy : clipPolicy(average.policy, floor)
    const distilled = parsed.distilSteps > 0 ? await distil(target, toStep) : undefined
    const result: SavedRound = {
      round,
      fromStep,
      toStep,
      evaluations: roundEvaluations,
      average,
      ...(running === undefined ? {} : { own }),
      ...(distilled === undefined ? {} : { distilled }),
      directory,
      estimatorState: advantage.getState?.(),
    }
    if (parsed.rounds > 1 && round < parsed.rounds) await saveRound(model, result)
    rounds.push(result)
  }
  const last = rounds.at(-1)!
  const tensorsLeft = tf.memory().numTensors
  model.dispose()

  // 4. The report: JSON and a chart, with what Nash play wins against random play.
  const reference = randomPlayReference()
  const report = (await run.writeReport<Reading, Omit<Report, keyof ExampleReport<Reading>>>(
    {
      options: { ...parsed, advantage: advantage.name, critic: criticModel ?? 'none' },
      before,
      after: after!,
      evaluations,
      average: last.average,
      ...(last.distilled === undefined ? {} : { distilled: last.distilled }),
      ...(parsed.rounds > 1 ? { rounds: rounds.map(({ directory: _, estimatorState: __, ...result }) => result) } : {}),
      uniformExploitability: 11 / 24,
      againstRandom: reference,
      tensorsLeftBeforeModelDispose: tensorsLeft,
    },
    {
      title: 'Kuhn Poker self-play (RAE + PPO), tiny model from scratch',
      series: [
        {
          name: 'exploitability (exact)',
          color: '#1f77b4',
          value: (e) => e.exploitability,
          reference: { value: 0.1, label: 'target 0.10' },
        },
        {
          name: 'win rate vs random',
          color: '#2ca02c',
          points: evaluations.filter(isEvaluation).map((evaluation) => ({ step: evaluation.step, value: evaluation.winRate })),
          range: [0, 1],
          reference: { value: reference.nash[0].winRate, label: `Nash play ${pct(reference.nash[0].winRate)}` },
        },
      ],
    },
  )) as Report
  log(
    `after ${last.toStep} self-play steps${parsed.rounds > 1 ? ` (${parsed.rounds} rounds)` : ''}: exploitability ${after!.exploitability.toFixed(3)} (from ${before.exploitability.toFixed(3)}; uniform play ${(11 / 24).toFixed(3)}), win rate vs random ${pct(after!.winRate)} (from ${pct(before.winRate)}; Nash play wins ${pct(reference.nash[0].winRate)}–${pct(reference.nash[1].winRate)}, a best response to random ${pct(reference.bestResponse.winRate)}), invalid ${pct(after!.invalidRate)}`,
  )
  log(`${report.seconds.toFixed(0)} s on ${run.backend}; report, metrics and chart in ${run.runDirectory}`)
  return report
}

/**
 * The later rounds' options whose default is another option's value (`roundSteps` is `steps` unless given…;
 * `roundWarmupSteps` 0): `rounds.json` keeps the value in force, so a resume that changes either is refused.
 */
const roundDefaults = {
  roundSteps: 'steps',
  roundKlCoefficient: 'klCoefficient',
  roundLearningRate: 'learningRate',
  roundWarmupSteps: undefined,
  roundEpisodesPerStep: 'episodesPerStep',
  roundMiniBatchSize: 'miniBatchSize',
} as const
type LaterRounds = Record<keyof typeof roundDefaults, number>

/** The later rounds' settings in force: each option given, or the one its default follows (`roundDefaults`). */
function laterRounds(parsed: z.output<typeof mainOptionsSchema>): LaterRounds {
  const entries = Object.entries(roundDefaults) as [keyof typeof roundDefaults, (typeof roundDefaults)[keyof typeof roundDefaults]][]
  return Object.fromEntries(entries.map(([name, base]) => [name, parsed[name] ?? (base === undefined ? 0 : parsed[base])])) as LaterRounds
}

/** What a run of several rounds is made of, kept in `rounds.json`: a resumed run must have the same (more rounds allowed). */
function roundSettings(parsed: z.output<typeof mainOptionsSchema>, later: LaterRounds, advantage: string): Record<string, unknown> {
  const {
    rounds,
    steps,
    roundReferenceFloor,
    roundAverage,
    averageFrom,
    averageEvery,
    distilSteps,
    distilExamplesPerDecision,
    distilLearningRate,
    raePerState,
  } = parsed
  return {
    rounds,
    steps,
    ...later,
    roundReferenceFloor: roundReferenceFloor ?? null,
    roundAverage,
    averageFrom,
    // Readings only where they change the average: `averageEvery` equal to `evaluateEvery` is the default's.
    averageEvery: averageEvery === undefined || averageEvery === parsed.evaluateEvery ? null : averageEvery,
    distilSteps,
    distilExamplesPerDecision,
    distilLearningRate,
    advantage,
    raePerState,
  }
}

/**
 * Refuses to resume a run of several rounds with other round settings than it started with (an `InvalidArgumentError`
 * naming the option), or with fewer rounds; records them when the run starts with more than one round.
 */
async function checkRoundSettings(
  runDirectory: string,
  settings: Record<string, unknown>,
  given: Pick<z.output<typeof mainOptionsSchema>, keyof typeof roundDefaults>,
): Promise<void> {
  const file = join(runDirectory, 'rounds.json')
  const saved = await readJsonIfPresent<Record<string, unknown>>(file)
  if (saved === undefined) {
    if ((settings.rounds as number) > 1) await writeFile(file, JSON.stringify(settings))
    return
  }
  // A run started before `roundAverage` existed averaged each round on its own, and one started before `averageEvery`
  // on its evaluations only; one started before `roundWarmupSteps` was recorded (the option is older than its record)
  // is not checked for it. One started before `roundEpisodesPerStep` and `roundMiniBatchSize` ran every round's steps alike,
  // and one started before `roundReferenceFloor` distilled the averages as they were.
  const recorded: Record<string, unknown> = {
    roundAverage: 'own',
    averageEvery: null,
    roundEpisodesPerStep: null,
    roundMiniBatchSize: null,
    roundReferenceFloor: null,
    ...saved,
  }
  for (const [name, value] of Object.entries(recorded)) {
    const followsDefault = name in roundDefaults ? (name as keyof typeof roundDefaults) : undefined
    // A run recorded before the values in force were kept has null for "the default": the option must not be given.
    const olderDefault = value === null && followsDefault !== undefined
    const now = olderDefault ? given[followsDefault] : settings[name]
    const fits = name === 'rounds' ? (now as number) >= (value as number) : olderDefault ? now === undefined : now === value
    if (fits) continue
    const defaultOf = followsDefault === undefined ? undefined : roundDefaults[followsDefault]
    const inForce =
      followsDefault === undefined || olderDefault
        ? ''
        : ` (the value in force: the option${defaultOf === undefined ? '' : `, or ${defaultOf} when not given`})`
    throw new InvalidArgumentError({
      argument: `options.${name}`,
      value: now,
      message: `${runDirectory} holds a run of rounds started with ${name} ${olderDefault ? 'not given' : JSON.stringify(value)}${inForce}: resume it with the same${name === 'rounds' ? ' or more' : ''}`,
    })
  }
  if (settings.rounds !== saved.rounds) await writeFile(file, JSON.stringify(settings))
}

/** A round as a resumed run needs it: where it ran and the estimator's state at its end. */
type SavedRound = RoundResult & { directory: string; estimatorState: unknown }

/**
 * A finished round of a run of several rounds, for a resumed run: its results and the estimator's state
 * (`round.json`) and its distilled model (`distilled/`).
 */
async function saveRound(model: CausalLanguageModel, result: SavedRound): Promise<void> {
  const { directory, ...saved } = result
  await saveModel(model, join(directory, 'distilled'))
  await writeFile(join(directory, 'round.json'), JSON.stringify(saved)) // last: it marks the round finished
}

async function readRound(directory: string): Promise<SavedRound | undefined> {
  const saved = await readJsonIfPresent<Omit<SavedRound, 'directory'>>(join(directory, 'round.json'))
  return saved === undefined ? undefined : { ...saved, directory }
}

/** The JSON in `file`, or undefined when there is no such file. */
async function readJsonIfPresent<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

/** The weights saved in `directory` (`saveModel`) into `model`'s parameters. */
async function restoreWeights(model: CausalLanguageModel, directory: string): Promise<void> {
  const saved = await loadModel(directory)
  try {
    for (const [name, weight] of model.parameters()) weight.assign(saved.parameter(name))
  } finally {
    saved.dispose()
  }
}

/** The tokens every move shares: its closing `]` and the end token. */
function formatTokenIds(tokenizer: {
  encode(text: string, options: { addSpecialTokens: boolean }): ArrayLike<number>
  eosTokenId?: number | undefined
}): number[] {
  const closing = tokenizer.encode(']', { addSpecialTokens: false })
  return [...Array.from(closing), ...(tokenizer.eosTokenId === undefined ? [] : [tokenizer.eosTokenId])]
}

/** `policy` with each decision's probability clipped to [floor, 1 − floor]. */
function clipPolicy(policy: KuhnPolicy, floor: number): KuhnPolicy {
  return Object.fromEntries(Object.entries(policy).map(([name, p]) => [name, Math.min(1 - floor, Math.max(floor, p))])) as KuhnPolicy
}

/** Whether `reading` played the match (an evaluation, not only a reading of the policy). */
export function isEvaluation(reading: Reading): reading is Evaluation {
  return 'winRate' in reading
}

const pct = (value: number) => `${(100 * value).toFixed(1)}%`

runExampleMain(import.meta.url, main)
