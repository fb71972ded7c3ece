/**
 * Self-play on Kuhn Poker (SPIRAL, on a model made from scratch): train a byte-level BPE on the game's
 * text, create a `tiny` transformer, warm it up on random legal play (SFT) so its moves are legal, then
 * let it play against itself with role-conditioned advantages (RAE) and PPO. Exploitability is exact
 * (`kuhnPolicyOf`: every legal move scored by its log-probability at each of the 12 information states).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { advantageEstimators, createRae } from '@ludic/advantages'
import { parseArgument, type AdvantageEstimatorV1, type TurnView } from '@ludic/core'
import { createKuhnPoker } from '@ludic/games'
import { createLocalPolicy, createModel, latestCheckpoint } from '@ludic/model'
import { createPolicyLoss } from '@ludic/objectives'
import { initTensors } from '@ludic/tensors'
import { createRlTrainer, createSftTrainer, parseCommandLineOptions, renderRunChart, type StepMetrics } from '@ludic/trainer'
import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { chatTemplate, exploitabilityOf, kuhnOptions, playAgainstRandom, promptOf, randomPlayExamples, trainKuhnTokenizer } from './kuhn-setup.js'
import type { KuhnRolloutData } from './rollout-setup.js'

export const mainOptionsSchema = z.strictObject({
  /** Self-play steps. */
  steps: z.number().int().min(0).default(100),
  /** Supervised warm-up updates on random legal play. */
  sftSteps: z.number().int().min(0).default(40),
  /** Episodes per self-play step. */
  episodesPerStep: z.number().int().positive().default(128),
  /** Episodes per deal (the trainer's `batch.groupSize`): each step plays `episodesPerStep × groupSize` episodes. RLOO and GRPO need > 1. */
  groupSize: z.number().int().positive().default(1),
  /**
   * Any `AdvantageEstimatorV1` (`createRloo()`, your own…), or a registered name (`--advantage rloo` on the
   * command line: `advantageEstimators.create(name)`). Default: `createRae()`. The report stores its name only.
   */
  advantage: z
    .union([
      z.custom<AdvantageEstimatorV1>((value) => typeof value === 'object' && value !== null && typeof (value as AdvantageEstimatorV1).estimate === 'function', 'must be an AdvantageEstimatorV1'),
      z.string().min(1),
    ])
    .default(() => createRae()),
  ppoEpochs: z.number().int().positive().default(2),
  miniBatchSize: z.number().int().positive().default(64),
  learningRate: z.number().positive().default(5e-4),
  sftLearningRate: z.number().positive().default(2e-3),
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
  /** β of the KL to the warmed-up policy (uniform over legal moves): keeps the policy mixed and legal. 0: none. */
  klCoefficient: z.number().min(0).default(0.2),
  /** Evaluate (exploitability, win rate vs random) every k steps. */
  evaluateEvery: z.number().int().positive().default(10),
  /** Episodes against the random player per evaluation. */
  evaluationEpisodes: z.number().int().positive().default(200),
  vocabSize: z.number().int().min(257).default(320),
  seed: z.number().int().default(0),
  /** Where the run goes; default `runs/<timestamp>` in this example's folder. An existing run with checkpoints is resumed. */
  runDirectory: z.string().min(1).optional(),
  checkpointEvery: z.number().int().min(0).default(5),
  /** `wasm`, `tensorflow`, `cpu`…; default: the best installed (LUDIC_BACKEND overrides). */
  backend: z.string().optional(),
  /**
   * Rollout worker threads for asynchronous collection (0: synchronous). With 1, a worker with its own backend
   * and a copy of the model plays the next step's episodes while the main thread trains (weights pushed every
   * step, batches at most one step old, the loss weighted by truncated importance ratios).
   */
  asyncWorkers: z.number().int().min(0).default(0),
  progress: z.boolean().default(true),
  log: z.custom<(line: string) => void>((value) => typeof value === 'function').default(() => (line: string) => console.log(line)),
})
export type MainOptions = z.input<typeof mainOptionsSchema>

export interface Evaluation {
  step: number
  exploitability: number
  winRate: number
  meanChips: number
  invalidRate: number
}

export interface Report {
  backend: string
  options: Record<string, unknown>
  before: Evaluation
  after: Evaluation
  evaluations: Evaluation[]
  uniformExploitability: number
  seconds: number
  runDirectory: string
}

const exampleDirectory = join(dirname(fileURLToPath(import.meta.url)), '..')

export async function main(options: MainOptions = {}): Promise<Report> {
  const parsed = parseArgument(mainOptionsSchema, options, 'options')
  const { log, seed } = parsed
  const advantage = typeof parsed.advantage === 'string' ? advantageEstimators.create(parsed.advantage) : parsed.advantage
  const started = performance.now()
  const runtime = await initTensors({ ...(parsed.backend === undefined ? {} : { backend: parsed.backend as never }), verbose: false })
  const runDirectory = parsed.runDirectory ?? join(exampleDirectory, 'runs', new Date().toISOString().replaceAll(':', '-').replace(/\..*$/, ''))
  await mkdir(runDirectory, { recursive: true })
  const resuming = (await latestCheckpoint(runDirectory)) !== undefined
  log(`backend ${runtime.backend}; run ${runDirectory}${resuming ? ' (resuming)' : ''}`)

  // 1. A tokenizer trained on game text, and a tiny model from scratch.
  const tokenizer = trainKuhnTokenizer(parsed.vocabSize)
  const model = createModel('tiny', { vocabSize: tokenizer.vocabSize, seed })
  const learner = createLocalPolicy({ model, tokenizer, chatTemplate, maxBatch: 256, seed, id: 'learner' })
  const evaluate = async (step: number): Promise<Evaluation> => {
    const { exploitability } = await exploitabilityOf(model, tokenizer)
    const play = await playAgainstRandom(learner, parsed.evaluationEpisodes, seed + 1 + step)
    return { step, exploitability, ...play }
  }

  // 2. SFT warm-up on random legal play, so the moves are legal; then "before" is measured.
  const beforePath = join(runDirectory, 'before.json')
  let before: Evaluation
  if (resuming) {
    before = JSON.parse(await readFile(beforePath, 'utf8')) as Evaluation
  } else {
    const sft = createSftTrainer({ model, tokenizer, examples: randomPlayExamples(), batchSize: 24, optimizer: { learningRate: parsed.sftLearningRate }, seed })
    const sftHistory = await sft.run({ steps: parsed.sftSteps, progress: parsed.progress })
    sft.dispose()
    log(`sft: ${parsed.sftSteps} steps, nll ${sftHistory.at(-1)?.nll.toFixed(3) ?? 'n/a'}`)
    before = await evaluate(0)
    await writeFile(beforePath, `${JSON.stringify(before, null, 2)}\n`)
  }
  log(`before self-play: exploitability ${before.exploitability.toFixed(3)}, win rate vs random ${pct(before.winRate)}, invalid ${pct(before.invalidRate)}`)

  // 3. Self-play with RAE and PPO; evaluations every few steps.
  const evaluations: Evaluation[] = [before]
  const trainer = createRlTrainer({
    model,
    tokenizer,
    ...(parsed.asyncWorkers === 0
      ? { environments: [() => createKuhnPoker({ ...kuhnOptions, invalidPenalty: parsed.invalidPenalty })], prompt: (view: TurnView) => promptOf(view), chatTemplate }
      : {
          // The workers build the same game, tokenizer, prompt and chat template from this module.
          asyncRollout: {
            setupModule: fileURLToPath(new URL('./rollout-setup.ts', import.meta.url)),
            setupData: { vocabSize: parsed.vocabSize, invalidPenalty: parsed.invalidPenalty } satisfies KuhnRolloutData,
            workers: parsed.asyncWorkers,
          },
        }),
    advantage,
    policyLoss: createPolicyLoss('ppo-clip', { clipLow: 0.2, clipHigh: 0.2 }),
    optimizer: { learningRate: parsed.learningRate },
    entropyCoefficient: parsed.entropyCoefficient,
    ...(parsed.entropyOnMovesOnly ? { entropyExcludeTokenIds: formatTokenIds(tokenizer) } : {}),
    schedule: cosineFrom(parsed.steps, parsed.decayFrom, parsed.finalLearningRateRatio),
    ...(parsed.klCoefficient > 0 ? { kl: { coefficient: parsed.klCoefficient } } : {}),
    batch: { episodesPerStep: parsed.episodesPerStep, groupSize: parsed.groupSize, ppoEpochs: parsed.ppoEpochs, miniBatchSize: parsed.miniBatchSize, maxTokens: 8, concurrency: 256, maxGenerationBatch: 256 },
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
  trainer.dispose()
  const tensorsLeft = tf.memory().numTensors
  model.dispose()

  // 4. The report: JSON and a chart.
  const report: Report = {
    backend: runtime.backend,
    options: Object.fromEntries(Object.entries(parsed).map(([name, value]) => [name, name === 'advantage' ? advantage.name : value]).filter(([name]) => name !== 'log')),
    before,
    after,
    evaluations,
    uniformExploitability: 11 / 24,
    seconds: (performance.now() - started) / 1000,
    runDirectory,
  }
  await writeFile(join(runDirectory, 'report.json'), `${JSON.stringify({ ...report, tensorsLeftBeforeModelDispose: tensorsLeft }, null, 2)}\n`)
  await writeFile(
    join(runDirectory, 'chart.svg'),
    renderRunChart('Kuhn Poker self-play (RAE + PPO), tiny model from scratch', [
      { name: 'exploitability (exact)', color: '#1f77b4', points: evaluations.map((e) => ({ step: e.step, value: e.exploitability })), reference: { value: 0.1, label: 'target 0.10' } },
      { name: 'win rate vs random', color: '#2ca02c', points: evaluations.map((e) => ({ step: e.step, value: e.winRate })), range: [0, 1] },
    ]),
  )
  log(`after ${trainer.stepCount} self-play steps: exploitability ${after.exploitability.toFixed(3)} (from ${before.exploitability.toFixed(3)}; uniform play ${(11 / 24).toFixed(3)}), win rate vs random ${pct(after.winRate)} (from ${pct(before.winRate)}), invalid ${pct(after.invalidRate)}`)
  log(`${report.seconds.toFixed(0)} s on ${runtime.backend}; report, metrics and chart in ${runDirectory}`)
  return report
}

function evaluationIn(metrics: StepMetrics): Evaluation | undefined {
  const exploitability = metrics['eval/exploitability']
  if (exploitability === undefined) return undefined
  return { step: metrics.step, exploitability, winRate: metrics['eval/winRate']!, meanChips: metrics['eval/meanChips']!, invalidRate: metrics['eval/invalidRate']! }
}

/** The tokens every move shares: its closing `]` and the end token. */
function formatTokenIds(tokenizer: { encode(text: string, options: { addSpecialTokens: boolean }): ArrayLike<number>; eosTokenId?: number | undefined }): number[] {
  const closing = tokenizer.encode(']', { addSpecialTokens: false })
  return [...Array.from(closing), ...(tokenizer.eosTokenId === undefined ? [] : [tokenizer.eosTokenId])]
}

/** 1 for the first `from` of the steps, then a cosine from 1 down to `finalRatio` at the last step. */
export const cosineFrom = (steps: number, from: number, finalRatio: number) => (step: number): number => {
  const half = Math.floor(steps * from)
  if (step < half || steps - 1 <= half) return 1
  const progress = Math.min(1, (step - half) / (steps - 1 - half))
  return finalRatio + (1 - finalRatio) * 0.5 * (1 + Math.cos(Math.PI * progress))
}

const pct = (value: number) => `${(100 * value).toFixed(1)}%`

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
