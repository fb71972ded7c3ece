import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { createLocalPolicy, createModel } from '@ludic/model'
import { initTensors, type InitTensorsOptions } from '@ludic/tensors'
import type { MatchFigures } from '@ludic/trainer'
import type { TopLevelSpec } from 'vega-lite'
import { z } from 'zod'
import { numberCell, type BenchTable } from '../bench-report.js'
import { copyModel, gameChatTemplate, playAgainstRandom, randomPlayExamples, selfPlay, trainGamesTokenizer, warmUp } from '../selfplay/game-selfplay.js'
import { checkTwoPlayerGames } from './evaluate-games.js'

export const transferOptionsSchema = z.strictObject({
  /** The training sets: each is one self-play run on those games (SPIRAL: Kuhn Poker, TicTacToe, Simple Negotiation). Default: Kuhn Poker with TicTacToe. */
  trainOn: z
    .array(z.array(z.string().min(1)).min(1))
    .min(1)
    .default(() => [['kuhn-poker-v1', 'tictactoe-v0']]),
  /** The games every model is evaluated on; those outside a training set are its held-out games. Default: Kuhn Poker, TicTacToe, the Prisoner's Dilemma, Pig Dice. */
  evaluateOn: z
    .array(z.string().min(1))
    .min(1)
    .default(() => ['kuhn-poker-v1', 'tictactoe-v0', 'iterated-prisoners-dilemma-v0', 'pig-dice-v0']),
  /** Self-play steps per training set. Default 6. */
  steps: z.number().int().min(0).max(100_000).default(6),
  /** Episodes per self-play step, of each training game. Default 16. */
  episodesPerStep: z.number().int().positive().max(100_000).default(16),
  /** PPO epochs over each step's moves. Default 2. */
  ppoEpochs: z.number().int().positive().max(100).default(2),
  /** Moves per PPO update. Default 64. */
  miniBatchSize: z.number().int().positive().max(100_000).default(64),
  /** Self-play learning rate (AdamW). Default 5e-4. */
  learningRate: z.number().positive().max(1).default(5e-4),
  /** β of the KL to the warmed-up model. Default 0.1. */
  klCoefficient: z.number().min(0).default(0.1),
  /** Reward of an invalid move in training (the opponent gets +0.5). Default −1.5. */
  invalidPenalty: z.number().max(0).default(-1.5),
  /** Warm-up updates on random legal play of every game (training and evaluation games). Default 150. */
  sftSteps: z.number().int().min(0).max(100_000).default(150),
  /** Warm-up examples per update. Default 32. */
  sftBatchSize: z.number().int().positive().max(4096).default(32),
  /** Warm-up learning rate. Default 2e-3. */
  sftLearningRate: z.number().positive().max(1).default(2e-3),
  /** Random games per game whose states make the warm-up. Default 60. */
  warmupEpisodes: z.number().int().positive().max(100_000).default(60),
  /** Warm-up examples per game (each game's list repeated to about this many). Default 400. */
  sftExamplesPerGame: z.number().int().positive().max(1_000_000).default(400),
  /** Episodes against the random player per evaluated game and model, seats alternating. Default 40. */
  evaluationEpisodes: z.number().int().positive().max(100_000).default(40),
  /** Ids of the byte-level BPE trained on the games' text. Default 384. */
  vocabSize: z.number().int().min(257).max(65_536).default(384),
  /** Seeds the model, the warm-up, self-play and the evaluations. Default 0. */
  seed: z.number().int().default(0),
  /** `wasm`, `tensorflow`, `cpu`…; default: the best installed (`LUDIC_BACKEND` overrides). */
  backend: z.string().optional(),
})
export type TransferOptions = z.input<typeof transferOptionsSchema>

export interface TransferRow {
  /** The training set, games joined by ` + `. */
  trainedOn: string
  game: string
  heldOut: boolean
  baseline: MatchFigures
  trained: MatchFigures
  /** Trained win rate − baseline win rate. */
  difference: number
}

export interface TransferResult {
  rows: TransferRow[]
  backend: string
  /** The warm-up's last NLL. */
  warmUpNll: number | undefined
  /** Per training set, the self-play steps' mean invalid-move rate. */
  trainingInvalidRate: Record<string, number[]>
  options: Omit<z.output<typeof transferOptionsSchema>, never>
}

/**
 * SPIRAL's transfer table on a tiny model from scratch: one model is warmed up on random legal play of every game
 * (so its moves are legal everywhere: the baseline), then for each training set a copy of it plays itself on those
 * games only (RAE + PPO); every copy and the baseline play every evaluation game against the uniform random player.
 * A row: training set × evaluated game, win rates with 95% Wilson intervals, and the difference from the baseline;
 * on held-out games that difference is the transfer.
 */
export async function runTransfer(
  options: TransferOptions,
  context: { signal?: AbortSignal; log?(line: string): void; onProgress?(done: number, total: number, label?: string): void } = {},
): Promise<TransferResult> {
  const parsed = parseArgument(transferOptionsSchema, options, 'options')
  const allGames = [...new Set([...parsed.trainOn.flat(), ...parsed.evaluateOn])]
  checkTwoPlayerGames(allGames, 'options.trainOn / options.evaluateOn')
  for (const [index, set] of parsed.trainOn.entries()) {
    if (new Set(set).size !== set.length) throw new InvalidArgumentError({ argument: `options.trainOn.${index}`, value: set, message: 'names a game twice' })
  }
  const runtime = await initTensors({ ...(parsed.backend === undefined ? {} : { backend: parsed.backend as InitTensorsOptions['backend'] }), verbose: false })
  const log = context.log ?? (() => {})
  const total = 2 + parsed.trainOn.length * 2
  let done = 0
  const progress = (label: string) => context.onProgress?.(++done, total, label)

  const examples = randomPlayExamples(allGames, parsed.warmupEpisodes, parsed.sftExamplesPerGame, parsed.seed)
  const tokenizer = trainGamesTokenizer(examples, parsed.vocabSize)
  const base = createModel('tiny', { vocabSize: tokenizer.vocabSize, seed: parsed.seed })
  try {
    const warmUpExamples = allGames.flatMap((game) => examples[game] ?? [])
    const warmUpNll = await warmUp(base, tokenizer, warmUpExamples, {
      steps: parsed.sftSteps,
      batchSize: parsed.sftBatchSize,
      learningRate: parsed.sftLearningRate,
      seed: parsed.seed,
    })
    log(`warm-up: ${parsed.sftSteps} steps on ${warmUpExamples.length} examples of ${allGames.join(', ')}, NLL ${warmUpNll?.toFixed(3) ?? 'n/a'}`)
    progress('warm-up')
    context.signal?.throwIfAborted()

    const evaluate = (model: typeof base, seed: number) =>
      playAgainstRandom(
        createLocalPolicy({ model, tokenizer, chatTemplate: gameChatTemplate, maxBatch: 256, seed, id: 'learner' }),
        parsed.evaluateOn,
        parsed.evaluationEpisodes,
        seed,
      )
    const evaluationSeed = parsed.seed + 1
    const baseline = await evaluate(base, evaluationSeed)
    log(`baseline (warmed up, no self-play): ${describe(baseline)}`)
    progress('baseline evaluation')

    const rows: TransferRow[] = []
    const trainingInvalidRate: Record<string, number[]> = {}
    for (const set of parsed.trainOn) {
      context.signal?.throwIfAborted()
      const name = set.join(' + ')
      const model = copyModel(base, parsed.seed)
      try {
        const history = await selfPlay(model, tokenizer, set, {
          seed: parsed.seed,
          steps: parsed.steps,
          episodesPerStep: parsed.episodesPerStep,
          ppoEpochs: parsed.ppoEpochs,
          miniBatchSize: parsed.miniBatchSize,
          learningRate: parsed.learningRate,
          klCoefficient: parsed.klCoefficient,
          invalidPenalty: parsed.invalidPenalty,
          ...(context.signal === undefined ? {} : { signal: context.signal }),
        })
        trainingInvalidRate[name] = history.map((metrics) => Number((metrics.invalidRate ?? 0).toFixed(4)))
        log(`self-play on ${name}: ${history.length} steps`)
        progress(`self-play on ${name}`)
        const trained = await evaluate(model, evaluationSeed)
        log(`trained on ${name}: ${describe(trained)}`)
        progress(`evaluation of ${name}`)
        for (const game of parsed.evaluateOn) {
          const before = baseline[game]!
          const after = trained[game]!
          rows.push({ trainedOn: name, game, heldOut: !set.includes(game), baseline: before, trained: after, difference: after.winRate - before.winRate })
        }
      } finally {
        model.dispose()
      }
    }
    return { rows, backend: runtime.backend, warmUpNll, trainingInvalidRate, options: parsed }
  } finally {
    base.dispose()
  }
}

function describe(figures: Record<string, MatchFigures>): string {
  return Object.entries(figures)
    .map(([game, match]) => `${game} win ${(100 * match.winRate).toFixed(1)}% (invalid ${(100 * match.invalidRate).toFixed(1)}%)`)
    .join(', ')
}

const interval = ([low, high]: readonly [number, number]) => `[${low.toFixed(3)}, ${high.toFixed(3)}]`

/** The transfer table: one row per training set and evaluated game. */
export function transferTable(result: TransferResult): BenchTable {
  return {
    title: 'Transfer: self-play on some games, win rate against the random player on every game',
    columns: [
      'trained on',
      'evaluated on',
      'held out',
      'baseline win rate',
      'baseline 95% interval',
      'trained win rate',
      'trained 95% interval',
      'difference',
      'invalid moves (trained)',
    ],
    rows: result.rows.map((row) => [
      row.trainedOn,
      row.game,
      row.heldOut ? 'yes' : 'no',
      numberCell(row.baseline.winRate, 3),
      interval(row.baseline.winRateInterval),
      numberCell(row.trained.winRate, 3),
      interval(row.trained.winRateInterval),
      numberCell(row.difference, 3),
      numberCell(row.trained.invalidRate, 3),
    ]),
    notes: [
      `A tiny model from scratch (vocabulary ${result.options.vocabSize}), warmed up for ${result.options.sftSteps} steps on random legal play of every game: that is the baseline. ` +
        `Each training set: ${result.options.steps} self-play steps of ${result.options.episodesPerStep} episodes per game (RAE + PPO), from the baseline's weights.`,
      `Evaluation: ${result.options.evaluationEpisodes} episodes per game against the uniform random player, seats alternating, sampled at temperature 1, an invalid move loses; intervals are 95% Wilson.`,
      "Held-out games (not in the training set) measure transfer; the difference is the trained win rate minus the baseline's.",
    ],
  }
}

/** The chart: per evaluated game, baseline and each trained model's win rate with its interval. */
export function transferChart(result: TransferResult): TopLevelSpec {
  const point = (model: string, game: string, figures: MatchFigures) => ({
    model,
    game,
    winRate: figures.winRate,
    low: figures.winRateInterval[0],
    high: figures.winRateInterval[1],
  })
  const baselines = new Map(result.rows.map((row) => [row.game, point('baseline (warm-up only)', row.game, row.baseline)]))
  const values = [...baselines.values(), ...result.rows.map((row) => point(`trained on ${row.trainedOn}`, row.game, row.trained))]
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: 'Transfer of self-play to other games', subtitle: 'win rate against the random player, 95% Wilson intervals' },
    background: 'white',
    width: 420,
    height: { step: 22 },
    data: { values },
    encoding: {
      y: { field: 'game', type: 'nominal', title: null, axis: { labelLimit: 320 } },
      yOffset: { field: 'model' },
      color: { field: 'model', title: null, legend: { labelLimit: 400 } },
    },
    layer: [
      {
        mark: { type: 'rule', strokeWidth: 2 },
        encoding: { x: { field: 'low', type: 'quantitative', scale: { domain: [0, 1] }, title: 'win rate' }, x2: { field: 'high' } },
      },
      { mark: { type: 'point', filled: true, size: 50 }, encoding: { x: { field: 'winRate', type: 'quantitative' } } },
    ],
  }
}
