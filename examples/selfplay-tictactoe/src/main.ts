/**
 * Self-play on TicTacToe (SPIRAL, on a model made from scratch): train a byte-level BPE on the game's text,
 * create a `tiny` transformer, warm it up on random legal play (SFT: every reachable position, each legal
 * move) so its moves are legal, then let it play against itself with role-conditioned advantages (RAE)
 * and PPO. Measured against the uniform random player (sampled at temperature 1 as trained, and greedy)
 * and against perfect play (minimax).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createRae } from '@ludic/advantages'
import { parseArgument, type PolicyV1 } from '@ludic/core'
import { createRandomPolicy, createTicTacToe, createTicTacToeMinimaxPolicy } from '@ludic/games'
import { createLocalPolicy, createModel, latestCheckpoint } from '@ludic/model'
import { createPolicyLoss } from '@ludic/objectives'
import { initTensors } from '@ludic/tensors'
import { createRlTrainer, createSftTrainer, parseCommandLineOptions, renderRunChart, type StepMetrics } from '@ludic/trainer'
import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { chatTemplate, playAgainst, randomPlayExamples, trainTicTacToeTokenizer, type PlayResult } from './tictactoe-setup.js'

export const mainOptionsSchema = z.strictObject({
  /** Self-play steps. */
  steps: z.number().int().min(0).default(120),
  /** Supervised warm-up updates on random legal play. */
  sftSteps: z.number().int().min(0).default(300),
  sftBatchSize: z.number().int().positive().default(64),
  sftLearningRate: z.number().positive().default(2e-3),
  /** Episodes per self-play step. */
  episodesPerStep: z.number().int().positive().default(128),
  ppoEpochs: z.number().int().positive().default(2),
  miniBatchSize: z.number().int().positive().default(128),
  learningRate: z.number().positive().default(5e-4),
  /** Learning-rate multiplier reached at the last step, by a cosine from 1. 1: constant. */
  finalLearningRateRatio: z.number().min(0).max(1).default(0.1),
  /** The loss gets − c·entropy (token mean). Default 0: the bonus spreads mass over the whole vocabulary (invalid moves). */
  entropyCoefficient: z.number().min(0).default(0),
  /** The training game's reward for an invalid move (the opponent gets +0.5); below −1, the worst legal outcome. */
  invalidPenalty: z.number().max(0).default(-3),
  /** β of the KL to the warmed-up policy (uniform over legal moves). 0: none. */
  klCoefficient: z.number().min(0).default(0.05),
  /**
   * Share of the training episodes in which one seat (drawn per episode) is the uniform random player instead of
   * the model itself (the trainer's `opponents`; only the model's moves are trained on). 0: pure self-play
   * (67.0% against random after the default 120 steps, seed 0); 0.5 (the default): 70.3%.
   */
  randomOpponentShare: z.number().min(0).max(1).default(0.5),
  /** Evaluate (win rate vs random, sampled and greedy) every k steps. */
  evaluateEvery: z.number().int().positive().default(10),
  /** Games against the random player per evaluation (seats alternating). */
  evaluationEpisodes: z.number().int().positive().default(400),
  /** Games against minimax at the end (sampled; greedy play against minimax is deterministic: 2 games). */
  minimaxEpisodes: z.number().int().positive().default(200),
  vocabSize: z.number().int().min(257).default(300),
  /** `tiny` (d 128, 2 layers) or `small` (d 256, 4 layers). */
  modelSize: z.enum(['tiny', 'small']).default('tiny'),
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

/** Against the uniform random player: sampled at temperature 1 (as trained) and greedy (argmax). */
export interface Evaluation {
  step: number
  /** Sampled (temperature 1). */
  winRate: number
  drawRate: number
  lossRate: number
  invalidRate: number
  winRateAsO: number
  winRateAsX: number
  /** Greedy (temperature 0). */
  greedyWinRate: number
  greedyDrawRate: number
  greedyInvalidRate: number
}

export interface MinimaxEvaluation {
  sampled: PlayResult
  greedy: PlayResult
}

export interface Report {
  backend: string
  options: Record<string, unknown>
  before: Evaluation
  after: Evaluation
  evaluations: Evaluation[]
  minimaxBefore: MinimaxEvaluation
  minimaxAfter: MinimaxEvaluation
  sftSeconds: number
  selfPlaySeconds: number
  seconds: number
  runDirectory: string
}

const exampleDirectory = join(dirname(fileURLToPath(import.meta.url)), '..')

export async function main(options: MainOptions = {}): Promise<Report> {
  const parsed = parseArgument(mainOptionsSchema, options, 'options')
  const { log, seed } = parsed
  const started = performance.now()
  const runtime = await initTensors({ ...(parsed.backend === undefined ? {} : { backend: parsed.backend as never }), verbose: false })
  const runDirectory = parsed.runDirectory ?? join(exampleDirectory, 'runs', new Date().toISOString().replaceAll(':', '-').replace(/\..*$/, ''))
  await mkdir(runDirectory, { recursive: true })
  const resuming = (await latestCheckpoint(runDirectory)) !== undefined
  log(`backend ${runtime.backend}; run ${runDirectory}${resuming ? ' (resuming)' : ''}`)

  // 1. A tokenizer trained on game text (each move one token), and a model from scratch.
  const tokenizer = trainTicTacToeTokenizer(parsed.vocabSize)
  const model = createModel(parsed.modelSize, { vocabSize: tokenizer.vocabSize, seed })
  const learner = createLocalPolicy({ model, tokenizer, chatTemplate, maxBatch: 256, seed, id: 'learner' })
  const random = (evaluationSeed: number) => createRandomPolicy({ seed: evaluationSeed })
  const evaluate = async (step: number): Promise<Evaluation> => {
    const evaluationSeed = seed + 1 + step
    const sampled = await playAgainst(learner, random(evaluationSeed), parsed.evaluationEpisodes, evaluationSeed, 1)
    const greedy = await playAgainst(learner, random(evaluationSeed), parsed.evaluationEpisodes, evaluationSeed, 0)
    return {
      step,
      winRate: sampled.winRate,
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
  const beforePath = join(runDirectory, 'before.json')
  let before: Evaluation
  let minimaxBefore: MinimaxEvaluation
  let sftSeconds = 0
  if (resuming) {
    ;({ before, minimaxBefore, sftSeconds } = JSON.parse(await readFile(beforePath, 'utf8')) as { before: Evaluation; minimaxBefore: MinimaxEvaluation; sftSeconds: number })
  } else {
    const sftStarted = performance.now()
    const sft = createSftTrainer({
      model,
      tokenizer,
      examples: randomPlayExamples(),
      batchSize: parsed.sftBatchSize,
      optimizer: { learningRate: parsed.sftLearningRate },
      schedule: { type: 'warmup-cosine', warmupSteps: Math.min(10, parsed.sftSteps), totalSteps: Math.max(1, parsed.sftSteps), minRatio: 0.1 },
      seed,
    })
    const sftHistory = await sft.run({ steps: parsed.sftSteps, progress: parsed.progress })
    sft.dispose()
    sftSeconds = (performance.now() - sftStarted) / 1000
    log(`sft: ${parsed.sftSteps} steps, nll ${sftHistory.at(-1)?.nll.toFixed(3) ?? 'n/a'} (${sftSeconds.toFixed(0)} s)`)
    before = await evaluate(0)
    minimaxBefore = await evaluateMinimax(0)
    await writeFile(beforePath, `${JSON.stringify({ before, minimaxBefore, sftSeconds }, null, 2)}\n`)
  }
  log(`before self-play: ${describe(before)}; vs minimax ${describeMinimax(minimaxBefore)}`)

  // 3. Self-play with RAE and PPO; evaluations every few steps.
  const selfPlayStarted = performance.now()
  const evaluations: Evaluation[] = [before]
  const trainer = createRlTrainer({
    model,
    tokenizer,
    environments: [() => createTicTacToe({ invalidPenalty: parsed.invalidPenalty })],
    ...(parsed.randomOpponentShare > 0 ? { opponents: [{ policy: createRandomPolicy({ seed: seed + 7, id: 'random-opponent' }), share: parsed.randomOpponentShare }] } : {}),
    advantage: createRae(),
    policyLoss: createPolicyLoss('ppo-clip', { clipLow: 0.2, clipHigh: 0.2 }),
    optimizer: { learningRate: parsed.learningRate },
    entropyCoefficient: parsed.entropyCoefficient,
    schedule: { type: 'warmup-cosine', totalSteps: Math.max(1, parsed.steps - 1), minRatio: parsed.finalLearningRateRatio },
    ...(parsed.klCoefficient > 0 ? { kl: { coefficient: parsed.klCoefficient } } : {}),
    batch: { episodesPerStep: parsed.episodesPerStep, ppoEpochs: parsed.ppoEpochs, miniBatchSize: parsed.miniBatchSize, maxTokens: 4, concurrency: 256, maxGenerationBatch: 256 },
    chatTemplate,
    seed,
    runDirectory,
    checkpointEvery: parsed.checkpointEvery,
    resume: resuming,
    evaluateEvery: parsed.evaluateEvery,
    evaluate: async ({ step }) => {
      const { step: _, ...figures } = await evaluate(step)
      return figures
    },
  })
  await trainer.run({ steps: parsed.steps, progress: parsed.progress })
  for (const metrics of trainer.history) {
    const evaluation = evaluationIn(metrics)
    if (evaluation !== undefined) evaluations.push(evaluation)
  }
  const last = evaluations.at(-1)!
  const after = last.step === trainer.stepCount ? last : await evaluate(trainer.stepCount)
  if (after !== last) evaluations.push(after)
  const minimaxAfter = await evaluateMinimax(trainer.stepCount)
  const selfPlaySeconds = (performance.now() - selfPlayStarted) / 1000
  trainer.dispose()
  const tensorsLeft = tf.memory().numTensors
  model.dispose()

  // 4. The report: JSON and a chart.
  const report: Report = {
    backend: runtime.backend,
    options: Object.fromEntries(Object.entries(parsed).filter(([name]) => name !== 'log')),
    before,
    after,
    evaluations,
    minimaxBefore,
    minimaxAfter,
    sftSeconds,
    selfPlaySeconds,
    seconds: (performance.now() - started) / 1000,
    runDirectory,
  }
  await writeFile(join(runDirectory, 'report.json'), `${JSON.stringify({ ...report, tensorsLeftBeforeModelDispose: tensorsLeft }, null, 2)}\n`)
  await writeFile(
    join(runDirectory, 'chart.svg'),
    renderRunChart(`TicTacToe self-play (RAE + PPO), ${parsed.modelSize} model from scratch`, [
      { name: 'win rate vs random (sampled, T = 1)', color: '#2ca02c', points: evaluations.map((e) => ({ step: e.step, value: e.winRate })), range: [0, 1], reference: { value: 0.7, label: 'target 0.70' } },
      { name: 'win rate vs random (greedy)', color: '#1f77b4', points: evaluations.map((e) => ({ step: e.step, value: e.greedyWinRate })), range: [0, 1], reference: { value: 0.7, label: 'target 0.70' } },
      { name: 'invalid-move rate (sampled)', color: '#d62728', points: evaluations.map((e) => ({ step: e.step, value: e.invalidRate })), reference: { value: 0.02, label: 'limit 0.02' } },
    ]),
  )
  log(`after ${trainer.stepCount} self-play steps: ${describe(after)}; vs minimax ${describeMinimax(minimaxAfter)}`)
  log(`${report.seconds.toFixed(0)} s on ${runtime.backend} (warm-up ${sftSeconds.toFixed(0)} s, self-play ${selfPlaySeconds.toFixed(0)} s); report, metrics and chart in ${runDirectory}`)
  return report
}

function evaluationIn(metrics: StepMetrics): Evaluation | undefined {
  const winRate = metrics['eval/winRate']
  if (winRate === undefined) return undefined
  const names = ['drawRate', 'lossRate', 'invalidRate', 'winRateAsO', 'winRateAsX', 'greedyWinRate', 'greedyDrawRate', 'greedyInvalidRate'] as const
  return { step: metrics.step, winRate, ...(Object.fromEntries(names.map((name) => [name, metrics[`eval/${name}`]!])) as Omit<Evaluation, 'step' | 'winRate'>) }
}

const pct = (value: number) => `${(100 * value).toFixed(1)}%`
const describe = (e: Evaluation) =>
  `vs random win ${pct(e.winRate)} (as O ${pct(e.winRateAsO)}, as X ${pct(e.winRateAsX)}), draw ${pct(e.drawRate)}, invalid ${pct(e.invalidRate)}; greedy win ${pct(e.greedyWinRate)}, invalid ${pct(e.greedyInvalidRate)}`
const describeMinimax = (m: MinimaxEvaluation) =>
  `W/D/L ${pct(m.sampled.winRate)}/${pct(m.sampled.drawRate)}/${pct(m.sampled.lossRate)} (greedy ${pct(m.greedy.winRate)}/${pct(m.greedy.drawRate)}/${pct(m.greedy.lossRate)})`

/** `--steps 10 --sft-steps 20 --run-directory runs/x …` → options. */
export const parseCommandLine = (argv: readonly string[]): MainOptions => parseCommandLineOptions(argv) as MainOptions

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main({ ...parseCommandLine(process.argv.slice(2)), progress: true })
    .then(() => process.exit(0))
    .catch((error: unknown) => {
      console.error(error)
      process.exitCode = 1
    })
}
