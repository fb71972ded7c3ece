/**
 * Self-play on Simple Negotiation (SPIRAL's negotiation game, on a model made from scratch): train a
 * byte-level BPE on the game's terse text, create a `tiny` transformer, warm it up on random legal play
 * (SFT) so it writes well-formed offers, `[Accept]` and `[Deny]`, then let it play against itself with
 * role-conditioned advantages (RAE) and PPO. Before and after: games against the heuristic trader
 * (`createNegotiationHeuristicPolicy`) and against a random legal player — mean change in inventory value,
 * win rate, deal rate, invalid rate.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createRae } from '@ludic/advantages'
import { parseArgument } from '@ludic/core'
import { createSimpleNegotiation } from '@ludic/games'
import { createLocalPolicy, createModel, latestCheckpoint } from '@ludic/model'
import { createPolicyLoss } from '@ludic/objectives'
import { initTensors } from '@ludic/tensors'
import { createRlTrainer, createSftTrainer, parseCommandLineOptions, renderRunChart, type StepMetrics } from '@ludic/trainer'
import { z } from 'zod'
import {
  chatTemplate,
  opponents,
  playAgainst,
  promptOf,
  randomPlayExamples,
  randomPlayObservations,
  trainNegotiationTokenizer,
  type MatchFigures,
} from './negotiation-setup.js'

export const mainOptionsSchema = z.strictObject({
  /** Self-play steps. */
  steps: z.number().int().min(0).default(100),
  /** Supervised warm-up updates on random legal play. */
  sftSteps: z.number().int().min(0).default(150),
  /** Random games whose states make the warm-up's prompts (and the tokenizer's corpus). */
  warmupGames: z.number().int().positive().default(64),
  /** `[Accept]` and `[Deny]` appear this many times per state in the warm-up, each offer once. */
  answerWeight: z.number().int().positive().default(4),
  /** Actions per game (alternating, player0 first; SPIRAL plays 10). */
  turns: z.number().int().positive().default(6),
  /** Games per self-play step (each gives a sample per turn). */
  episodesPerStep: z.number().int().positive().default(32),
  ppoEpochs: z.number().int().positive().default(2),
  miniBatchSize: z.number().int().positive().default(64),
  learningRate: z.number().positive().default(1e-3),
  sftLearningRate: z.number().positive().default(2e-3),
  /** β of the KL to the warmed-up policy: keeps moves well-formed. 0: none. */
  klCoefficient: z.number().min(0).default(0.05),
  /** The training game's reward for an invalid move (the opponent gets +0.5); below −1, the worst win/loss outcome. */
  invalidPenalty: z.number().max(0).default(-1.5),
  /** Most tokens per move. */
  maxTokens: z.number().int().positive().default(16),
  /** Evaluate (against the heuristic and the random player) every k steps. */
  evaluateEvery: z.number().int().positive().default(20),
  /** Games against each opponent per evaluation. */
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
  heuristic: MatchFigures
  random: MatchFigures
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
const opponentNames = ['heuristic', 'random'] as const
const figureNames = ['meanValueChange', 'opponentValueChange', 'winRate', 'meanReward', 'dealRate', 'invalidRate'] as const

export async function main(options: MainOptions = {}): Promise<Report> {
  const parsed = parseArgument(mainOptionsSchema, options, 'options')
  const { log, seed, turns } = parsed
  const started = performance.now()
  const runtime = await initTensors({ ...(parsed.backend === undefined ? {} : { backend: parsed.backend as never }), verbose: false })
  const runDirectory = parsed.runDirectory ?? join(exampleDirectory, 'runs', new Date().toISOString().replaceAll(':', '-').replace(/\..*$/, ''))
  await mkdir(runDirectory, { recursive: true })
  const resuming = (await latestCheckpoint(runDirectory)) !== undefined
  log(`backend ${runtime.backend}; run ${runDirectory}${resuming ? ' (resuming)' : ''}`)

  // 1. A tokenizer trained on the game's terse text, and a tiny model from scratch.
  const observations = randomPlayObservations(parsed.warmupGames, turns, seed)
  const tokenizer = trainNegotiationTokenizer(observations, parsed.vocabSize)
  const model = createModel('tiny', { vocabSize: tokenizer.vocabSize, seed })
  const learner = createLocalPolicy({ model, tokenizer, chatTemplate, maxBatch: 256, seed, id: 'learner' })
  const evaluate = async (step: number): Promise<Evaluation> => {
    const match = { episodes: parsed.evaluationEpisodes, turns, seed: seed + 1 + step, maxTokens: parsed.maxTokens }
    const { heuristic, random } = opponents(seed + 1 + step)
    return { step, heuristic: await playAgainst(learner, heuristic, match), random: await playAgainst(learner, random, match) }
  }

  // 2. SFT warm-up on random legal play, so moves are well-formed; then "before" is measured.
  const beforePath = join(runDirectory, 'before.json')
  let before: Evaluation
  if (resuming) {
    before = JSON.parse(await readFile(beforePath, 'utf8')) as Evaluation
  } else {
    const examples = randomPlayExamples(observations, parsed.answerWeight)
    const sft = createSftTrainer({ model, tokenizer, examples, batchSize: 32, optimizer: { learningRate: parsed.sftLearningRate }, seed })
    const sftHistory = await sft.run({ steps: parsed.sftSteps, progress: parsed.progress })
    sft.dispose()
    log(`sft: ${parsed.sftSteps} steps on ${examples.length} examples, nll ${sftHistory.at(-1)?.nll.toFixed(3) ?? 'n/a'}`)
    before = await evaluate(0)
    await writeFile(beforePath, `${JSON.stringify(before, null, 2)}\n`)
  }
  log(`before self-play: ${describe(before)}`)

  // 3. Self-play with RAE and PPO; evaluations every few steps.
  const evaluations: Evaluation[] = [before]
  const trainer = createRlTrainer({
    model,
    tokenizer,
    environments: [() => createSimpleNegotiation({ turns, invalidPenalty: parsed.invalidPenalty })],
    advantage: createRae(),
    policyLoss: createPolicyLoss('ppo-clip', { clipLow: 0.2, clipHigh: 0.2 }),
    optimizer: { learningRate: parsed.learningRate },
    ...(parsed.klCoefficient > 0 ? { kl: { coefficient: parsed.klCoefficient } } : {}),
    batch: { episodesPerStep: parsed.episodesPerStep, ppoEpochs: parsed.ppoEpochs, miniBatchSize: parsed.miniBatchSize, maxTokens: parsed.maxTokens, concurrency: 256, maxGenerationBatch: 256 },
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
  const series = (opponent: (typeof opponentNames)[number], figure: (typeof figureNames)[number]) => evaluations.map((evaluation) => ({ step: evaluation.step, value: evaluation[opponent][figure] }))
  await writeFile(
    join(runDirectory, 'chart.svg'),
    renderRunChart('Simple Negotiation self-play (RAE + PPO), tiny model from scratch', [
      { name: 'value change per game vs heuristic', color: '#1f77b4', points: series('heuristic', 'meanValueChange'), range: [-60, 60], reference: { value: 0, label: 'no trade' } },
      { name: 'value change per game vs random', color: '#2ca02c', points: series('random', 'meanValueChange'), range: [-60, 60], reference: { value: 0, label: 'no trade' } },
      { name: 'win rate vs heuristic', color: '#d62728', points: series('heuristic', 'winRate'), range: [0, 1] },
      { name: 'invalid rate (both evaluations)', color: '#9467bd', points: evaluations.map((evaluation) => ({ step: evaluation.step, value: (evaluation.heuristic.invalidRate + evaluation.random.invalidRate) / 2 })), range: [0, 1] },
    ]),
  )
  log(`after ${trainer.stepCount} self-play steps: ${describe(after)}`)
  log(`${report.seconds.toFixed(0)} s on ${runtime.backend}; report, metrics and chart in ${runDirectory}`)
  return report
}

const pct = (value: number) => `${(100 * value).toFixed(1)}%`
const signed = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(1)}`

function describe(evaluation: Evaluation): string {
  return opponentNames
    .map((name) => {
      const figures = evaluation[name]
      return `vs ${name}: value ${signed(figures.meanValueChange)} (opponent ${signed(figures.opponentValueChange)}), win ${pct(figures.winRate)}, deals ${pct(figures.dealRate)}, invalid ${pct(figures.invalidRate)}`
    })
    .join('; ')
}

/** `{ heuristic: { winRate } }` → `{ 'heuristic/winRate' }`: the trainer logs them as `eval/heuristic/winRate`. */
function flatten(evaluation: Evaluation): Record<string, number> {
  const metrics: Record<string, number> = {}
  for (const opponent of opponentNames) for (const figure of figureNames) metrics[`${opponent}/${figure}`] = evaluation[opponent][figure]
  return metrics
}

function evaluationIn(metrics: StepMetrics): Evaluation | undefined {
  if (metrics['eval/heuristic/winRate'] === undefined) return undefined
  const figures = (opponent: string) => Object.fromEntries(figureNames.map((figure) => [figure, metrics[`eval/${opponent}/${figure}`]!])) as unknown as MatchFigures
  return { step: metrics.step, heuristic: figures('heuristic'), random: figures('random') }
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
