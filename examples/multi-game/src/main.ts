/**
 * One model, several games at once: a `tiny` transformer made from scratch is warmed up on random legal
 * play of Kuhn Poker, TicTacToe and the Iterated Prisoner's Dilemma, then trained by self-play on all
 * three with one `createRlTrainer({ environments: [...] })` (RAE keeps one baseline per game and role;
 * the trainer logs `reward/<game>/<role>` and `winRate/<game>/<role>`). Before and after: per game, win
 * rate against the uniform random player, and Kuhn Poker's exploitability, exactly.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createRae } from '@ludic/advantages'
import { parseArgument } from '@ludic/core'
import { cosineFrom } from '@ludic/example-selfplay-kuhn-poker'
import { exploitabilityOf } from '@ludic/example-selfplay-kuhn-poker/kuhn-setup'
import { createLocalPolicy, createModel, latestCheckpoint } from '@ludic/model'
import { createPolicyLoss } from '@ludic/objectives'
import { initTensors } from '@ludic/tensors'
import { createRlTrainer, createSftTrainer, parseCommandLineOptions, renderRunChart, type StepMetrics } from '@ludic/trainer'
import { z } from 'zod'
import {
  chatTemplate,
  gameFactories,
  gameIds,
  gameNames,
  playAgainstRandom,
  promptOf,
  randomPlayExamples,
  trainGamesTokenizer,
  type GameFigures,
  type GameId,
  type GameSettings,
} from './games-setup.js'

export const mainOptionsSchema = z.strictObject({
  /** Self-play steps. */
  steps: z.number().int().min(0).default(100),
  /** Supervised warm-up updates on random legal play of every game. */
  sftSteps: z.number().int().min(0).default(300),
  /** Random games (TicTacToe, dilemma) whose states make the warm-up; each game's examples are repeated to about `sftExamplesPerGame`. */
  warmupGames: z.number().int().positive().default(200),
  sftExamplesPerGame: z.number().int().positive().default(600),
  /** Episodes of EACH game per self-play step. */
  episodesPerStep: z.number().int().positive().default(24),
  /** Rounds of the Iterated Prisoner's Dilemma (10 in SPIRAL; fewer keeps episodes short). */
  ipdRounds: z.number().int().positive().default(3),
  ppoEpochs: z.number().int().positive().default(2),
  miniBatchSize: z.number().int().positive().default(64),
  learningRate: z.number().positive().default(5e-4),
  sftLearningRate: z.number().positive().default(2e-3),
  /** Learning-rate multiplier reached at the last step, by a cosine from 1. */
  finalLearningRateRatio: z.number().min(0).max(1).default(0.1),
  /** β of the KL to the warmed-up policy (uniform over legal moves). 0: none. */
  klCoefficient: z.number().min(0).default(0.1),
  /** Kuhn Poker's training reward for an invalid move: below −2, the most a hand loses (the Kuhn example's). */
  kuhnInvalidPenalty: z.number().max(0).default(-3),
  /** TicTacToe's and the dilemma's training reward for an invalid move: below −1, a loss. */
  invalidPenalty: z.number().max(0).default(-1.5),
  /** Evaluate every k steps. */
  evaluateEvery: z.number().int().positive().default(10),
  /** Episodes of each game against the random player per evaluation. */
  evaluationEpisodes: z.number().int().positive().default(100),
  vocabSize: z.number().int().min(257).default(384),
  seed: z.number().int().default(0),
  /** Where the run goes; default `runs/<timestamp>` in this example's folder. An existing run with checkpoints is resumed. */
  runDirectory: z.string().min(1).optional(),
  checkpointEvery: z.number().int().min(0).default(10),
  /** `wasm`, `tensorflow`, `cpu`…; default: the best installed (LUDIC_BACKEND overrides). */
  backend: z.string().optional(),
  progress: z.boolean().default(true),
  log: z.custom<(line: string) => void>((value) => typeof value === 'function').default(() => (line: string) => console.log(line)),
})
export type MainOptions = z.input<typeof mainOptionsSchema>

export interface Evaluation {
  step: number
  /** Kuhn Poker's exact exploitability (uniform play: 11/24 ≈ 0.458). */
  kuhnExploitability: number
  /** Per game (`kuhn`, `tictactoe`, `ipd`): figures against the uniform random player. */
  games: Record<string, GameFigures>
}

export interface Report {
  backend: string
  options: Record<string, unknown>
  before: Evaluation
  after: Evaluation
  evaluations: Evaluation[]
  seconds: number
  runDirectory: string
}

const exampleDirectory = join(dirname(fileURLToPath(import.meta.url)), '..')
const figureNames = ['winRate', 'drawRate', 'meanReward', 'invalidRate'] as const

export async function main(options: MainOptions = {}): Promise<Report> {
  const parsed = parseArgument(mainOptionsSchema, options, 'options')
  const { log, seed } = parsed
  const started = performance.now()
  const runtime = await initTensors({ ...(parsed.backend === undefined ? {} : { backend: parsed.backend as never }), verbose: false })
  const runDirectory = parsed.runDirectory ?? join(exampleDirectory, 'runs', new Date().toISOString().replaceAll(':', '-').replace(/\..*$/, ''))
  await mkdir(runDirectory, { recursive: true })
  const resuming = (await latestCheckpoint(runDirectory)) !== undefined
  log(`backend ${runtime.backend}; run ${runDirectory}${resuming ? ' (resuming)' : ''}`)
  const settings: GameSettings = {
    ipdRounds: parsed.ipdRounds,
    invalidPenalty: { 'kuhn-poker-v1': parsed.kuhnInvalidPenalty, 'tictactoe-v0': parsed.invalidPenalty, 'iterated-prisoners-dilemma-v0': parsed.invalidPenalty },
  }

  // 1. A tokenizer trained on every game's terse text, and a tiny model from scratch.
  const examples = randomPlayExamples(settings, parsed.warmupGames, parsed.sftExamplesPerGame, seed)
  const tokenizer = trainGamesTokenizer(examples, parsed.vocabSize)
  const model = createModel('tiny', { vocabSize: tokenizer.vocabSize, seed })
  const learner = createLocalPolicy({ model, tokenizer, chatTemplate, maxBatch: 256, seed, id: 'learner' })
  const evaluate = async (step: number): Promise<Evaluation> => {
    const { exploitability } = await exploitabilityOf(model, tokenizer)
    const figures = await playAgainstRandom(learner, settings, parsed.evaluationEpisodes, seed + 1 + step)
    return { step, kuhnExploitability: exploitability, games: Object.fromEntries(gameIds.map((game) => [gameNames[game], figures[game]])) }
  }

  // 2. SFT warm-up on random legal play of every game; then "before" is measured.
  const beforePath = join(runDirectory, 'before.json')
  let before: Evaluation
  if (resuming) {
    before = JSON.parse(await readFile(beforePath, 'utf8')) as Evaluation
  } else {
    const all = gameIds.flatMap((game) => examples[game])
    const sft = createSftTrainer({ model, tokenizer, examples: all, batchSize: 32, optimizer: { learningRate: parsed.sftLearningRate }, seed })
    const sftHistory = await sft.run({ steps: parsed.sftSteps, progress: parsed.progress })
    sft.dispose()
    log(`sft: ${parsed.sftSteps} steps on ${all.length} examples (${gameIds.map((game) => `${gameNames[game]} ${examples[game].length}`).join(', ')}), nll ${sftHistory.at(-1)?.nll.toFixed(3) ?? 'n/a'}`)
    before = await evaluate(0)
    await writeFile(beforePath, `${JSON.stringify(before, null, 2)}\n`)
  }
  log(`before self-play: ${describe(before)}`)

  // 3. Self-play on every game at once, RAE and PPO; evaluations every few steps.
  const evaluations: Evaluation[] = [before]
  const factories = gameFactories(settings)
  const trainer = createRlTrainer({
    model,
    tokenizer,
    environments: gameIds.map((game) => factories[game]),
    advantage: createRae(),
    policyLoss: createPolicyLoss('ppo-clip', { clipLow: 0.2, clipHigh: 0.2 }),
    optimizer: { learningRate: parsed.learningRate },
    schedule: cosineFrom(parsed.steps, 0, parsed.finalLearningRateRatio),
    ...(parsed.klCoefficient > 0 ? { kl: { coefficient: parsed.klCoefficient } } : {}),
    batch: { episodesPerStep: parsed.episodesPerStep, ppoEpochs: parsed.ppoEpochs, miniBatchSize: parsed.miniBatchSize, maxTokens: 8, concurrency: 256, maxGenerationBatch: 256 },
    prompt: (view) => promptOf(view),
    chatTemplate,
    seed,
    runDirectory,
    checkpointEvery: parsed.checkpointEvery,
    resume: resuming,
    evaluateEvery: parsed.evaluateEvery,
    evaluate: async ({ step }) => flatten(await evaluate(step)),
  })
  await trainer.run({ steps: parsed.steps, progress: parsed.progress })
  for (const metrics of trainer.history) {
    const evaluation = evaluationIn(metrics)
    if (evaluation !== undefined) evaluations.push(evaluation)
  }
  const last = evaluations.at(-1)!
  const after = last.step === trainer.stepCount ? last : await evaluate(trainer.stepCount)
  if (after !== last) evaluations.push(after)
  const training = trainingCurves(trainer.history)
  trainer.dispose()
  model.dispose()

  // 4. The report: JSON and a chart.
  const report: Report = {
    backend: runtime.backend,
    options: Object.fromEntries(Object.entries(parsed).filter(([name]) => name !== 'log')),
    before,
    after,
    evaluations,
    seconds: (performance.now() - started) / 1000,
    runDirectory,
  }
  await writeFile(join(runDirectory, 'report.json'), `${JSON.stringify(report, null, 2)}\n`)
  const winRate = (game: GameId) => evaluations.map((evaluation) => ({ step: evaluation.step, value: evaluation.games[gameNames[game]]!.winRate }))
  await writeFile(
    join(runDirectory, 'chart.svg'),
    renderRunChart('Three games at once: self-play (RAE + PPO), tiny model from scratch', [
      { name: 'Kuhn Poker exploitability (exact)', color: '#1f77b4', points: evaluations.map((evaluation) => ({ step: evaluation.step, value: evaluation.kuhnExploitability })), reference: { value: 11 / 24, label: 'uniform 0.458' } },
      { name: 'win rate vs random: Kuhn Poker', color: '#2ca02c', points: winRate('kuhn-poker-v1'), range: [0, 1] },
      { name: 'win rate vs random: TicTacToe', color: '#d62728', points: winRate('tictactoe-v0'), range: [0, 1] },
      { name: "win rate vs random: Prisoner's Dilemma", color: '#9467bd', points: winRate('iterated-prisoners-dilemma-v0'), range: [0, 1] },
      { name: 'training invalid rate (all games)', color: '#8c564b', points: training.invalidRate, range: [0, Math.max(0.05, ...training.invalidRate.map((point) => point.value))] },
    ]),
  )
  log(`after ${trainer.stepCount} self-play steps: ${describe(after)}`)
  log(`${report.seconds.toFixed(0)} s on ${runtime.backend}; report, metrics and chart in ${runDirectory}`)
  return report
}

const pct = (value: number) => `${(100 * value).toFixed(1)}%`

function describe(evaluation: Evaluation): string {
  const games = gameIds.map((game) => {
    const figures = evaluation.games[gameNames[game]]!
    return `${gameNames[game]} win ${pct(figures.winRate)} (draw ${pct(figures.drawRate)}, invalid ${pct(figures.invalidRate)})`
  })
  return `Kuhn exploitability ${evaluation.kuhnExploitability.toFixed(3)}; vs random: ${games.join(', ')}`
}

/** The trainer logs evaluation figures as `eval/<name>`: `kuhnExploitability`, `<game>/<figure>`. */
function flatten(evaluation: Evaluation): Record<string, number> {
  const metrics: Record<string, number> = { kuhnExploitability: evaluation.kuhnExploitability }
  for (const [game, figures] of Object.entries(evaluation.games)) for (const figure of figureNames) metrics[`${game}/${figure}`] = figures[figure]
  return metrics
}

function evaluationIn(metrics: StepMetrics): Evaluation | undefined {
  const exploitability = metrics['eval/kuhnExploitability']
  if (exploitability === undefined) return undefined
  const games = Object.fromEntries(
    gameIds.map((game) => [gameNames[game], Object.fromEntries(figureNames.map((figure) => [figure, metrics[`eval/${gameNames[game]}/${figure}`]!])) as unknown as GameFigures]),
  )
  return { step: metrics.step, kuhnExploitability: exploitability, games }
}

function trainingCurves(history: readonly StepMetrics[]): { invalidRate: { step: number; value: number }[] } {
  return { invalidRate: history.map((metrics) => ({ step: metrics.step, value: metrics.invalidRate ?? 0 })) }
}

/** `--steps 10 --sft-steps 20 --run-directory runs/x …` → options. */
export const parseCommandLine = (argv: readonly string[]): MainOptions => parseCommandLineOptions(argv) as MainOptions

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main({ progress: true, ...parseCommandLine(process.argv.slice(2)) })
    .then(() => process.exit(0))
    .catch((error: unknown) => {
      console.error(error)
      process.exitCode = 1
    })
}
