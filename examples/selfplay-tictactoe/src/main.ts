/**
 * Self-play on TicTacToe (SPIRAL, on a model made from scratch): train a byte-level BPE on the game's text,
 * create a `tiny` transformer, warm it up on random legal play (SFT: every reachable position, each legal
 * move) so its moves are legal, then let it play against itself with role-conditioned advantages (RAE)
 * and PPO. Measured against the uniform random player (sampled at temperature 1, as trained by default, and greedy)
 * and against perfect play (minimax).
 */
import { createGae, createRae, gaeOptionsSchema, raeOptionsSchema } from '@ludic/advantages'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { createRandomPolicy, createTicTacToe, createTicTacToeMinimaxPolicy } from '@ludic/games'
import { createLocalPolicy, createModel, presetConfig } from '@ludic/model'
import { withRandomOpenings } from '@ludic/rollout'
import { runExampleMain, type ExampleReport } from '@ludic/report'
import { createRlTrainer, criticConfigSchema } from '@ludic/trainer'
import {
  exampleLeagueOptions,
  exampleOptionsSchema,
  leagueOpponents,
  leagueRatingsOf,
  opponentSharesAtMostOne,
  startExampleRun,
  writeLeagueRatingsChart,
  type LeagueRatings,
} from '@ludic/trainer/example'
import * as tf from '@tensorflow/tfjs-core'
import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'
import { describeExactPlay, exactModelPlay, type ExactPlay } from './exact-play.js'
import {
  attentionHeadsOverrides,
  chatTemplate,
  createOpportunistPolicy,
  createTacticalPolicy,
  playAgainst,
  randomPlayExamples,
  trainTicTacToeTokenizer,
  type RunModelShape,
  type PlayResult,
} from './tictactoe-setup.js'

/**
 * The shared example options (`exampleOptionsSchema`: steps, warm-up, batch, learning rates, KL, evaluations, run)
 * with this example's defaults, and its own.
 */
export const mainOptionsSchema = exampleOptionsSchema({ steps: 120, miniBatchSize: 128, evaluationEpisodes: 400, vocabSize: 300 })
  .extend({
    /** Examples per warm-up update. */
    sftBatchSize: z.number().int().positive().default(64),
    /** Learning-rate multiplier reached at the last step, by a cosine from 1. 1: constant. */
    finalLearningRateRatio: z.number().min(0).max(1).default(0.1),
    /** The loss gets − c·entropy (token mean). Default 0: the bonus spreads mass over the whole vocabulary (invalid moves). */
    entropyCoefficient: z.number().min(0).default(0),
    /** The training game's reward for an invalid move (the opponent gets +0.5); below −1, the worst legal outcome. */
    invalidPenalty: z.number().max(0).default(-3),
    /**
     * Share of the training episodes in which one seat (drawn per episode) is the uniform random player instead of
     * the model itself (the trainer's `opponents`; only the model's moves are trained on). 0: pure self-play; 0.5 (the
     * default) won slightly more often against random after the default steps (the README's "Measured" has both runs).
     */
    randomOpponentShare: z.number().min(0).max(1).default(0.5),
    /**
     * Share of the training episodes in which one seat is the perfect player (`createTicTacToeMinimaxPolicy`, a scripted
     * opponent in the trainer's `opponents`): a curriculum toward solid play, against the player the final evaluation
     * uses. 0 (the default): none. With the other shares at most 1 in all.
     */
    minimaxOpponentShare: z.number().min(0).max(1).default(0),
    /**
     * Of the games against the random player, the share in which it moves first (O) and the learner second (X): above
     * 0.5, more of those games in the learner's weaker seat (the trainer's opponent `seats`). Needs
     * `randomOpponentShare` above 0. Default: the seats alike (drawn as every opponent's).
     */
    randomOpponentFirstMoverShare: z.number().min(0).max(1).optional(),
    /**
     * Share of the training episodes in which one seat is the tactical player (`createTacticalPolicy`: it wins when it
     * can, blocks when it must, else moves at random), which punishes a missed block at once in the varied positions of
     * random play. 0 (the default): none.
     */
    tacticalOpponentShare: z.number().min(0).max(1).default(0),
    /**
     * Share of the training episodes in which one seat is the opportunist player (`createOpportunistPolicy`: the random
     * player that takes a win when it has one, and never blocks): the positions of random play, where a missed block
     * loses at once. 0 (the default): none.
     */
    opportunistOpponentShare: z.number().min(0).max(1).default(0),
    /**
     * Share of the training games started from a random opening (exploring starts, `withRandomOpenings` of
     * `@ludic/rollout`): 1 to `randomOpeningMoves` moves, uniform over the empty cells, before either seat moves — so the
     * learner meets the blocks and wins of positions its own play and its opponents' seldom make, against every
     * opponent (minimax punishes a missed block there at once). The evaluations start from the empty board. Default 0.
     */
    randomOpeningShare: z.number().min(0).max(1).default(0),
    /** With `randomOpeningShare` > 0: the most moves of a random opening, 1–4 (no game ends within 4 moves). Default 4. */
    randomOpeningMoves: z.number().int().min(1).max(4).optional(),
    /** The league (`exampleLeagueOptions`): a past snapshot in one seat of `leagueShare` of the games. */
    ...exampleLeagueOptions,
    /**
     * Collect the self-play games on the generation engine (the trainer's `batch.engine: true`: continuous batching,
     * each game steps as soon as its move is back). The evaluations keep the batch path. Default false (today's path).
     */
    engine: z.boolean().default(false),
    /**
     * The advantage estimator: `rae` (role-conditioned baselines, SPIRAL; the default) or `gae` (a critic's per-token
     * values, GAE along each seat's moves, whitened over the batch: PPO's estimator; needs the critic of `critic`).
     */
    advantage: z.enum(['rae', 'gae']).default('rae'),
    /**
     * With `advantage` `gae`: the critic, `separate` (a value model copied from the warmed-up policy, trained beside it;
     * the trainer's default) or `shared` (a value head on the policy's trunk). Refused with `rae`. Default `separate`.
     */
    critic: criticConfigSchema.shape.model.unwrap().optional(),
    /** With `advantage` `gae`: GAE's λ (1: Monte Carlo returns, 0: one-step TD). Refused with `rae`. Default: the estimator's (1). */
    gaeLambda: gaeOptionsSchema.shape.lambda.unwrap().optional(),
    /**
     * With `advantage` `rae`: one baseline per seat and opponent (RAE's `perOpponent`: the random player, minimax, the
     * tactical player, the learner itself, each snapshot) instead of one per seat, so that a draw against minimax is not
     * compared with wins against the random player. Refused with `gae`. Default false (SPIRAL's one per seat).
     */
    raePerOpponent: raeOptionsSchema.shape.perOpponent.unwrap().default(false),
    /**
     * With `advantage` `rae`: one baseline per position too (RAE's `perState`, keyed by the game's `stateKey`: the mark
     * to move and the board), each move judged by its return against its own position's baseline rather than the
     * average game's. Refused with `gae`. Default false.
     */
    raePerState: raeOptionsSchema.shape.perState.unwrap().default(false),
    /**
     * At the end, play the random player exactly too (`exactModelPlay`: every position's move probabilities, each game
     * weighed by its probability; ~10 s natively, longer on WebAssembly): the report's `exactAfter`. Default true.
     */
    exactEvaluation: z.boolean().default(true),
    /** Games against minimax at the end (sampled; greedy play against minimax is deterministic: 2 games). */
    minimaxEpisodes: z.number().int().positive().default(200),
    /** `tiny` (d 128, 2 layers) or `small` (d 256, 4 layers). */
    modelSize: z.enum(['tiny', 'small']).default('tiny'),
    /**
     * Attention heads of the model (keys and values as many): the preset's width split among more heads, the same
     * parameters. Each head is a separate average over the board's cells for the move to read, and 32 heads of 4 fit
     * the best reply to every position far better than the preset's 4 of 32 (the README's "Why 32 heads"). Must split
     * the width into heads of an even size. Default: the preset's (4).
     */
    attentionHeads: z.number().int().positive().optional(),
  })
  // Refused when parsed, before the warm-up: the opponents' shares of one game's seat add up to at most 1.
  .superRefine(opponentSharesAtMostOne(['randomOpponentShare', 'minimaxOpponentShare', 'tacticalOpponentShare', 'opportunistOpponentShare', 'leagueShare']))
export type MainOptions = z.input<typeof mainOptionsSchema>

/** Against the uniform random player: sampled at temperature 1 (as trained unless `--temperature` says otherwise: `PlayResult`'s figures) and greedy (argmax). */
export interface Evaluation extends PlayResult {
  step: number
  /** Greedy (temperature 0). */
  greedyWinRate: number
  greedyDrawRate: number
  greedyInvalidRate: number
}

export interface MinimaxEvaluation {
  sampled: PlayResult
  greedy: PlayResult
}

/** `report.json`: the options, every evaluation, the games against minimax before and after, and the time taken. */
export type Report = ExampleReport<Evaluation> & {
  minimaxBefore: MinimaxEvaluation
  minimaxAfter: MinimaxEvaluation
  /**
   * After self-play, against the random player exactly (`exactModelPlay`: every game weighed by its probability under
   * the model's move probabilities, no sampling noise), sampled (T = 1, over the legal moves) and greedy, with where
   * each seat's win chance went. Absent with `exactEvaluation` false.
   */
  exactAfter?: { sampled: ExactPlay; greedy: ExactPlay }
  sftSeconds: number
  selfPlaySeconds: number
  tensorsLeftBeforeModelDispose: number
  /**
   * With the league (`leagueShare` > 0): the pool's Bradley–Terry ratings at the end of training (Elo scale, mean 1000,
   * over the pool's rating window), each snapshot by the step it was taken at, and the learner's; also charted in
   * `league-ratings.svg`. Later snapshots rated above earlier ones is the league's sign of progress.
   */
  leagueRatings?: LeagueRatings
}

export async function main(options: MainOptions = {}): Promise<Report> {
  const parsed = parseArgument(mainOptionsSchema, options, 'options')
  for (const name of ['raePerOpponent', 'raePerState'] as const)
    if (parsed.advantage === 'gae' && parsed[name])
      throw new InvalidArgumentError({ argument: `options.${name}`, value: true, message: "needs options.advantage 'rae' (GAE keeps no baselines)" })
  if (parsed.advantage === 'rae') {
    for (const [name, value] of [
      ['critic', parsed.critic],
      ['gaeLambda', parsed.gaeLambda],
    ] as const)
      if (value !== undefined)
        throw new InvalidArgumentError({ argument: `options.${name}`, value, message: "needs options.advantage 'gae' (RAE uses no critic)" })
  }
  const first = parsed.randomOpponentFirstMoverShare
  if (parsed.randomOpponentShare === 0 && first !== undefined)
    throw new InvalidArgumentError({ argument: 'options.randomOpponentFirstMoverShare', value: first, message: 'needs options.randomOpponentShare above 0' })
  if (parsed.randomOpeningShare === 0 && parsed.randomOpeningMoves !== undefined)
    throw new InvalidArgumentError({
      argument: 'options.randomOpeningMoves',
      value: parsed.randomOpeningMoves,
      message: 'needs options.randomOpeningShare above 0',
    })
  const { log, seed } = parsed
  // Refused before anything runs.
  const heads = attentionHeadsOverrides(parsed.modelSize, parsed.attentionHeads)
  const run = await startExampleRun(new URL('..', import.meta.url), parsed)

  // 1. A tokenizer trained on game text (each move one token), and a model from scratch.
  const tokenizer = trainTicTacToeTokenizer(parsed.vocabSize)
  const model = createModel(parsed.modelSize, {
    vocabSize: tokenizer.vocabSize,
    seed,
    ...heads,
  })
  const shape: RunModelShape = { modelSize: parsed.modelSize, attentionHeads: model.config.numAttentionHeads, vocabSize: parsed.vocabSize }
  await checkRunModel(run, shape, presetConfig(parsed.modelSize, parsed.vocabSize).numAttentionHeads).catch((error: unknown) => {
    model.dispose()
    throw error
  })
  const learner = createLocalPolicy({ model, tokenizer, chatTemplate, maxBatch: 256, seed, id: 'learner' })
  const random = (evaluationSeed: number) => createRandomPolicy({ seed: evaluationSeed })
  const evaluate = async (step: number): Promise<Evaluation> => {
    const evaluationSeed = seed + 1 + step
    const sampled = await playAgainst(learner, random(evaluationSeed), parsed.evaluationEpisodes, evaluationSeed, 1)
    const greedy = await playAgainst(learner, random(evaluationSeed), parsed.evaluationEpisodes, evaluationSeed, 0)
    return {
      step,
      winRate: sampled.winRate,
      winRateInterval: sampled.winRateInterval,
      drawRate: sampled.drawRate,
      lossRate: sampled.lossRate,
      invalidRate: sampled.invalidRate,
      winRateAsO: sampled.winRateAsO,
      winRateAsX: sampled.winRateAsX,
      greedyWinRate: greedy.winRate,
      greedyDrawRate: greedy.drawRate,
      greedyInvalidRate: greedy.invalidRate,
    }
  }
  const minimax = createTicTacToeMinimaxPolicy()
  const evaluateMinimax = async (step: number): Promise<MinimaxEvaluation> => ({
    sampled: await playAgainst(learner, minimax, parsed.minimaxEpisodes, seed + 7 + step, 1),
    greedy: await playAgainst(learner, minimax, 2, seed + 7 + step, 0),
  })

  // 2. SFT warm-up on random legal play, so the moves are legal; then "before" is measured.
  const { before, minimaxBefore, sftSeconds } = await run.beforeTraining(async () => {
    const schedule = { type: 'warmup-cosine', warmupSteps: Math.min(10, parsed.sftSteps), totalSteps: Math.max(1, parsed.sftSteps), minRatio: 0.1 } as const
    const warmUp = await run.warmUp({ model, tokenizer, examples: randomPlayExamples(), batchSize: parsed.sftBatchSize, schedule })
    log(`sft: ${parsed.sftSteps} steps, nll ${warmUp.nll?.toFixed(3) ?? 'n/a'} (${warmUp.seconds.toFixed(0)} s)`)
    return { before: await evaluate(0), minimaxBefore: await evaluateMinimax(0), sftSeconds: warmUp.seconds }
  })
  log(`before self-play: ${describeEvaluation(before)}; vs minimax ${describeMinimax(minimaxBefore)}`)

  // 3. Self-play with RAE (or GAE and a critic) and PPO; evaluations every few steps.
  const selfPlayStarted = performance.now()
  const opponents = [
    ...(parsed.randomOpponentShare > 0
      ? [
          {
            policy: createRandomPolicy({ seed: seed + 7, id: 'random-opponent' }),
            share: parsed.randomOpponentShare,
            ...(first === undefined ? {} : { seats: { player0: first, player1: 1 - first } }),
          },
        ]
      : []),
    ...(parsed.minimaxOpponentShare > 0 ? [{ policy: createTicTacToeMinimaxPolicy({ id: 'minimax-opponent' }), share: parsed.minimaxOpponentShare }] : []),
    ...(parsed.tacticalOpponentShare > 0
      ? [{ policy: createTacticalPolicy({ seed: seed + 11, id: 'tactical-opponent' }), share: parsed.tacticalOpponentShare }]
      : []),
    ...(parsed.opportunistOpponentShare > 0
      ? [{ policy: createOpportunistPolicy({ seed: seed + 13, id: 'opportunist-opponent' }), share: parsed.opportunistOpponentShare }]
      : []),
    ...leagueOpponents(parsed),
  ]
  const trainerSettings = run.trainerConfig({ maxTokens: 4, evaluate })
  const trainer = createRlTrainer({
    model,
    tokenizer,
    environments: [
      () => {
        const game = createTicTacToe({ invalidPenalty: parsed.invalidPenalty })
        return parsed.randomOpeningShare > 0 ? withRandomOpenings(game, { share: parsed.randomOpeningShare, maxMoves: parsed.randomOpeningMoves ?? 4 }) : game
      },
    ],
    ...(opponents.length > 0 ? { opponents } : {}),
    chatTemplate,
    ...trainerSettings,
    batch: { ...trainerSettings.batch, engine: parsed.engine },
    ...(parsed.advantage === 'gae'
      ? { advantage: createGae(parsed.gaeLambda === undefined ? {} : { lambda: parsed.gaeLambda }), critic: { model: parsed.critic ?? 'separate' } }
      : { advantage: createRae({ perOpponent: parsed.raePerOpponent, perState: parsed.raePerState }) }),
    entropyCoefficient: parsed.entropyCoefficient,
    schedule: { type: 'warmup-cosine', totalSteps: Math.max(1, parsed.steps - 1), minRatio: parsed.finalLearningRateRatio },
  })
  await trainer.run({ steps: parsed.steps, progress: parsed.progress })
  const { evaluations, after } = await run.evaluations(before, trainer, evaluate)
  const minimaxAfter = await evaluateMinimax(trainer.stepCount)
  const exactAfter = parsed.exactEvaluation ? await exactModelPlay(model, tokenizer) : undefined
  const selfPlaySeconds = (performance.now() - selfPlayStarted) / 1000
  const leagueRatings = parsed.leagueShare > 0 ? leagueRatingsOf(trainer.history.at(-1)) : undefined
  trainer.dispose()
  const tensorsLeft = tf.memory().numTensors
  model.dispose()

  // 4. The report: JSON and a chart.
  const report: Report = await run.writeReport(
    {
      options: parsed,
      before,
      after,
      evaluations,
      minimaxBefore,
      minimaxAfter,
      ...(exactAfter === undefined ? {} : { exactAfter }),
      sftSeconds,
      selfPlaySeconds,
      tensorsLeftBeforeModelDispose: tensorsLeft,
      ...(leagueRatings === undefined ? {} : { leagueRatings }),
    },
    {
      title: `TicTacToe self-play (${parsed.advantage === 'gae' ? 'GAE + critic' : 'RAE'} + PPO), ${parsed.modelSize} model from scratch`,
      series: [
        {
          name: 'win rate vs random (sampled, T = 1)',
          color: '#2ca02c',
          value: (e) => e.winRate,
          range: [0, 1],
          reference: { value: 0.7, label: 'target 0.70' },
        },
        {
          name: 'win rate vs random (greedy)',
          color: '#1f77b4',
          value: (e) => e.greedyWinRate,
          range: [0, 1],
          reference: { value: 0.7, label: 'target 0.70' },
        },
        {
          name: 'invalid-move rate (sampled)',
          color: '#d62728',
          value: (e) => e.invalidRate,
          reference: { value: 0.02, label: 'limit 0.02' },
        },
      ],
    },
  )
  if (leagueRatings !== undefined) await writeLeagueRatingsChart(run.runDirectory, leagueRatings)
  log(`after ${trainer.stepCount} self-play steps: ${describeEvaluation(after)}; vs minimax ${describeMinimax(minimaxAfter)}`)
  if (exactAfter !== undefined)
    log(`exactly, vs random: sampled ${describeExactPlay(exactAfter.sampled)}; greedy win ${(100 * exactAfter.greedy.winRate).toFixed(1)} %`)
  log(
    `${report.seconds.toFixed(0)} s on ${run.backend} (warm-up ${sftSeconds.toFixed(0)} s, self-play ${selfPlaySeconds.toFixed(0)} s); report, metrics and chart in ${run.runDirectory}`,
  )
  return report
}

/**
 * The model's shape options, kept in the run directory (`model.json`): a resumed run must build the model its
 * checkpoints were trained as (more heads have the same parameters, so the weights would load into another model
 * without a word). A run that starts afresh (no checkpoint yet) writes them; a resumed one is compared with them and
 * refused, naming the option, where they differ. A run from before `model.json` was kept had the preset's heads.
 */
async function checkRunModel(run: { runDirectory: string; resuming: boolean }, shape: RunModelShape, presetHeads: number): Promise<void> {
  const path = join(run.runDirectory, 'model.json')
  if (!run.resuming) {
    await writeFile(path, `${JSON.stringify(shape, null, 2)}\n`)
    return
  }
  let saved: Record<string, unknown> = { attentionHeads: presetHeads }
  if (existsSync(path)) {
    try {
      saved = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>
    } catch (error) {
      throw new InvalidArgumentError({
        argument: 'options.runDirectory',
        value: run.runDirectory,
        message: `holds an unreadable model.json (${String(error)})`,
      })
    }
  }
  for (const [name, value] of Object.entries(shape))
    if (name in saved && saved[name] !== value)
      throw new InvalidArgumentError({
        argument: `options.${name}`,
        value,
        message: `differs from the run being resumed (${run.runDirectory} was trained with ${JSON.stringify(saved[name])})`,
      })
}

const pct = (value: number) => `${(100 * value).toFixed(1)}%`
/** The win rate's 95% interval; none in a before.json written before the intervals were recorded (a resumed run). */
const interval = (e: PlayResult) => {
  const bounds = (e as Partial<PlayResult>).winRateInterval
  return bounds === undefined ? '' : ` [${pct(bounds.low)}, ${pct(bounds.high)}]`
}
export const describeEvaluation = (e: Evaluation) =>
  `vs random win ${pct(e.winRate)}${interval(e)} (as O ${pct(e.winRateAsO)}, as X ${pct(e.winRateAsX)}), draw ${pct(e.drawRate)}, invalid ${pct(e.invalidRate)}; greedy win ${pct(e.greedyWinRate)}, invalid ${pct(e.greedyInvalidRate)}`
const describeMinimax = (m: MinimaxEvaluation) =>
  `W/D/L ${pct(m.sampled.winRate)}/${pct(m.sampled.drawRate)}/${pct(m.sampled.lossRate)} (greedy ${pct(m.greedy.winRate)}/${pct(m.greedy.drawRate)}/${pct(m.greedy.lossRate)})`

runExampleMain(import.meta.url, main)
