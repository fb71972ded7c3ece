/**
 * One model, several games at once: a `tiny` transformer made from scratch is warmed up on random legal
 * play of Kuhn Poker, TicTacToe and the Iterated Prisoner's Dilemma, then trained by self-play on all
 * three with one `createRlTrainer({ environments: [...] })` (RAE keeps one baseline per game and role;
 * the trainer logs `reward/<game>/<role>` and `winRate/<game>/<role>`). Before and after: per game, win
 * rate against the uniform random player, and Kuhn Poker's exploitability, exactly.
 */
import { createRae } from '@ludic/advantages'
import { parseArgument } from '@ludic/core'
import { createLocalPolicy, createModel } from '@ludic/model'
import { runExampleMain, type ExampleReport } from '@ludic/report'
import { createRlTrainer, type StepMetrics } from '@ludic/trainer'
import { exampleOptionsSchema, startExampleRun } from '@ludic/trainer/example'
import { z } from 'zod'
import {
  chatTemplate,
  gameFactories,
  gameIds,
  gameNames,
  kuhnExploitabilityOf,
  playAgainstRandom,
  promptOf,
  randomPlayExamples,
  trainGamesTokenizer,
  type GameFigures,
  type GameName,
  type GameSettings,
} from './games-setup.js'

/**
 * The shared example options (`exampleOptionsSchema`: steps, warm-up, batch, learning rates, KL, evaluations, run)
 * with this example's defaults, and its own.
 */
export const mainOptionsSchema = exampleOptionsSchema({ episodesPerStep: 24, klCoefficient: 0.1 }).extend({
  /** Random games (TicTacToe, dilemma) whose states make the warm-up; each game's examples are repeated to about `sftExamplesPerGame`. */
  warmupGames: z.number().int().positive().default(200),
  sftExamplesPerGame: z.number().int().positive().default(600),
  /** Rounds of the Iterated Prisoner's Dilemma (10 in SPIRAL; fewer keeps episodes short). */
  ipdRounds: z.number().int().positive().default(3),
  /** Learning-rate multiplier reached at the last step, by a cosine from 1. */
  finalLearningRateRatio: z.number().min(0).max(1).default(0.1),
  /** Kuhn Poker's training reward for an invalid move: below −2, the most a hand loses (the Kuhn example's). */
  kuhnInvalidPenalty: z.number().max(0).default(-3),
  /** TicTacToe's and the dilemma's training reward for an invalid move: below −1, a loss. */
  invalidPenalty: z.number().max(0).default(-1.5),
})
export type MainOptions = z.input<typeof mainOptionsSchema>

export type Evaluation = {
  step: number
  /** Kuhn Poker's exact exploitability (uniform play: 11/24 ≈ 0.458). */
  kuhnExploitability: number
} & Record<GameName, GameFigures> // per game (`kuhn`, `tictactoe`, `ipd`): figures against the uniform random player

export type Report = ExampleReport<Evaluation>

export async function main(options: MainOptions = {}): Promise<Report> {
  const parsed = parseArgument(mainOptionsSchema, options, 'options')
  const { log, seed } = parsed
  const run = await startExampleRun(new URL('..', import.meta.url), parsed)
  const settings: GameSettings = {
    ipdRounds: parsed.ipdRounds,
    invalidPenalty: {
      'kuhn-poker-v1': parsed.kuhnInvalidPenalty,
      'tictactoe-v0': parsed.invalidPenalty,
      'iterated-prisoners-dilemma-v0': parsed.invalidPenalty,
    },
  }

  // 1. A tokenizer trained on every game's terse text, and a tiny model from scratch.
  const examples = randomPlayExamples(settings, parsed.warmupGames, parsed.sftExamplesPerGame, seed)
  const tokenizer = trainGamesTokenizer(examples, parsed.vocabSize)
  const model = createModel('tiny', { vocabSize: tokenizer.vocabSize, seed })
  const learner = createLocalPolicy({ model, tokenizer, chatTemplate, maxBatch: 256, seed, id: 'learner' })
  const evaluate = async (step: number): Promise<Evaluation> => {
    const kuhnExploitability = await kuhnExploitabilityOf(model, tokenizer)
    const figures = await playAgainstRandom(learner, settings, parsed.evaluationEpisodes, seed + 1 + step)
    return { step, kuhnExploitability, kuhn: figures['kuhn-poker-v1'], tictactoe: figures['tictactoe-v0'], ipd: figures['iterated-prisoners-dilemma-v0'] }
  }

  // 2. SFT warm-up on random legal play of every game; then "before" is measured.
  const before = await run.beforeTraining(async () => {
    const all = gameIds.flatMap((game) => examples[game])
    const warmUp = await run.warmUp({ model, tokenizer, examples: all, batchSize: 32 })
    log(
      `sft: ${parsed.sftSteps} steps on ${all.length} examples (${gameIds.map((game) => `${gameNames[game]} ${examples[game].length}`).join(', ')}), nll ${warmUp.nll?.toFixed(3) ?? 'n/a'}`,
    )
    return evaluate(0)
  })
  log(`before self-play: ${describe(before)}`)

  // 3. Self-play on every game at once, RAE and PPO; evaluations every few steps.
  const factories = gameFactories(settings)
  const trainer = createRlTrainer({
    model,
    tokenizer,
    environments: gameIds.map((game) => factories[game]),
    prompt: (view) => promptOf(view),
    chatTemplate,
    ...run.trainerConfig({ maxTokens: 8, evaluate }),
    advantage: createRae(),
    schedule: { type: 'warmup-cosine', totalSteps: Math.max(1, parsed.steps - 1), minRatio: parsed.finalLearningRateRatio },
  })
  await trainer.run({ steps: parsed.steps, progress: parsed.progress })
  const { evaluations, after } = await run.evaluations(before, trainer, evaluate)
  const training = trainingCurves(trainer.history)
  trainer.dispose()
  model.dispose()

  // 4. The report: JSON and a chart.
  const report: Report = await run.writeReport(
    { options: parsed, before, after, evaluations },
    {
      title: 'Three games at once: self-play (RAE + PPO), tiny model from scratch',
      series: [
        {
          name: 'Kuhn Poker exploitability (exact)',
          color: '#1f77b4',
          value: (e) => e.kuhnExploitability,
          reference: { value: 11 / 24, label: 'uniform 0.458' },
        },
        { name: 'win rate vs random: Kuhn Poker', color: '#2ca02c', value: (e) => e.kuhn.winRate, range: [0, 1] },
        { name: 'win rate vs random: TicTacToe', color: '#d62728', value: (e) => e.tictactoe.winRate, range: [0, 1] },
        { name: "win rate vs random: Prisoner's Dilemma", color: '#9467bd', value: (e) => e.ipd.winRate, range: [0, 1] },
        {
          name: 'training invalid rate (all games)',
          color: '#8c564b',
          points: training.invalidRate,
          range: [0, Math.max(0.05, ...training.invalidRate.map((point) => point.value))],
        },
      ],
    },
  )
  log(`after ${trainer.stepCount} self-play steps: ${describe(after)}`)
  log(`${report.seconds.toFixed(0)} s on ${run.backend}; report, metrics and chart in ${run.runDirectory}`)
  return report
}

const pct = (value: number) => `${(100 * value).toFixed(1)}%`

function describe(evaluation: Evaluation): string {
  const games = gameIds.map((game) => {
    const figures = evaluation[gameNames[game]]
    return `${gameNames[game]} win ${pct(figures.winRate)} (draw ${pct(figures.drawRate)}, invalid ${pct(figures.invalidRate)})`
  })
  return `Kuhn exploitability ${evaluation.kuhnExploitability.toFixed(3)}; vs random: ${games.join(', ')}`
}

function trainingCurves(history: readonly StepMetrics[]): { invalidRate: { step: number; value: number }[] } {
  return { invalidRate: history.map((metrics) => ({ step: metrics.step, value: metrics.invalidRate ?? 0 })) }
}

runExampleMain(import.meta.url, main)
