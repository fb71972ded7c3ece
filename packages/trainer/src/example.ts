/**
 * What the self-play examples share (`examples/selfplay-*`, `multi-game`, `kuhn-estimator-comparison`): their
 * common options with documented defaults, the run directory (`runs/<timestamp>`, resumed when it holds a
 * checkpoint), the warm-up, the trainer settings those options decide, the evaluations before, during and
 * after training, the report and its chart, and the command line.
 */
import './node-platform.js'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { latestCheckpoint } from '@ludic/model'
import { createPolicyLoss, ppoClipOptionsSchema } from '@ludic/objectives'
import {
  evaluationMetrics,
  loggedEvaluations,
  makeRunDirectory,
  renderRunChart,
  runReport,
  writeReportFiles,
  type Evaluated,
  type EvaluationSeries,
  type ExampleReport,
} from '@ludic/report'
import { initTensors, type InitTensorsOptions } from '@ludic/tensors'
import { z } from 'zod'
import type { StepMetrics } from './metrics-log.js'
import { klConfigSchema, type EvaluationContext, type RlTrainerConfig } from './rl-config.js'
import type { SftTrainerConfig } from './sft-trainer.js'
import { snapshotPoolConfigSchema, type SnapshotPoolConfig } from './league/snapshot-pool.js'
import { warmUp } from './warm-up.js'

/** The defaults of `exampleOptionsSchema`; an example passes those it changes. */
export const exampleOptionDefaults = {
  steps: 100,
  sftSteps: 300,
  episodesPerStep: 128,
  ppoEpochs: 2,
  miniBatchSize: 64,
  learningRate: 5e-4,
  sftLearningRate: 2e-3,
  klCoefficient: 0.05,
  evaluateEvery: 10,
  evaluationEpisodes: 100,
  vocabSize: 384,
  seed: 0,
  checkpointEvery: 10,
}
export type ExampleOptionDefaults = typeof exampleOptionDefaults

/**
 * The options every self-play example takes (`--name value` on its command line), with `defaults` in place of
 * `exampleOptionDefaults` where given. An example adds its own with `.extend({ … })`.
 */
export function exampleOptionsSchema(defaults: Partial<ExampleOptionDefaults> = {}) {
  const value = { ...exampleOptionDefaults, ...defaults }
  return z.strictObject({
    /** Self-play steps. Default 100. */
    steps: z.number().int().min(0).default(value.steps),
    /** Supervised warm-up updates on random legal play, so a model made from scratch moves legally. Default 300. */
    sftSteps: z.number().int().min(0).default(value.sftSteps),
    /** Episodes (reset seeds) per self-play step, of each environment. Default 128. */
    episodesPerStep: z.number().int().positive().default(value.episodesPerStep),
    /** PPO epochs over each step's samples. Default 2. */
    ppoEpochs: z.number().int().positive().default(value.ppoEpochs),
    /** Samples (moves) per PPO update. Default 64. */
    miniBatchSize: z.number().int().positive().default(value.miniBatchSize),
    /**
     * Sampling temperature of the self-play games (the trainer's `batch.temperature`): every log-prob of a step (and
     * the KL's) is the tempered policy's, softmax(logits / T). Above 1 the games explore moves the policy is sure
     * against, and play at T = 1 (the evaluations') is the sharper policy. Default 1.
     */
    temperature: z.number().positive().max(10).default(1),
    /** PPO's ratio clip below 1: the ratio is clipped to [1 − clipLow, 1 + clipHigh] (verl's `clip_ratio_low`; `ppo-clip`'s bounds, at most 1). Default 0.2. */
    clipLow: ppoClipOptionsSchema.shape.clipLow,
    /**
     * PPO's ratio clip above 1 (verl's `clip_ratio_high`; `ppo-clip`'s bounds): above `clipLow`, DAPO's clip-higher,
     * which lets a move the policy holds at a low probability grow faster when it pays. Default 0.2.
     */
    clipHigh: ppoClipOptionsSchema.shape.clipHigh,
    /** Self-play learning rate (AdamW). Default 5e-4. */
    learningRate: z.number().positive().default(value.learningRate),
    /** Warm-up learning rate. Default 2e-3. */
    sftLearningRate: z.number().positive().default(value.sftLearningRate),
    /** β of the KL to the warmed-up policy: keeps the policy mixed and its moves legal. 0: none. Default 0.05. */
    klCoefficient: z.number().min(0).default(value.klCoefficient),
    /**
     * β's multiplier at the last step, by a cosine from 1 over the self-play steps (the trainer's `kl.schedule`): 0
     * anneals the KL away, so the final policy is not held near the warmed-up one. Default 1: constant β.
     */
    klFinalRatio: z.number().min(0).max(1).default(1),
    /** The KL's per-token estimator: the trainer's `kl.estimator`, its schema and default (`low_var_kl`). */
    klEstimator: klConfigSchema.shape.estimator,
    /**
     * Every k self-play steps the KL's reference moves toward the policy (the trainer's `kl.referenceSync`; a moving
     * magnet, R-NaD's regularisation). 0: the reference stays the warmed-up policy. Default 0.
     */
    klReferenceEvery: z.number().int().min(0).default(0),
    /** α of each move: the policy's share of the new reference (the trainer's `kl.referenceSync.mixupAlpha`). Default 1: a copy. */
    klReferenceMixup: z.number().gt(0).max(1).default(1),
    /** Evaluate every k self-play steps (and before and after). Default 10. */
    evaluateEvery: z.number().int().positive().default(value.evaluateEvery),
    /** Episodes against each evaluation opponent per evaluation, seats alternating. Default 100. */
    evaluationEpisodes: z.number().int().positive().default(value.evaluationEpisodes),
    /** Ids of the byte-level BPE trained on the game's text (256 bytes and the end token at least). Default 384. */
    vocabSize: z.number().int().min(257).default(value.vocabSize),
    /** Seeds the model, the warm-up, self-play and the evaluations. Default 0. */
    seed: z.number().int().default(value.seed),
    /** Where the run goes; default `runs/<timestamp>` in the example's folder. An existing run with checkpoints is resumed. */
    runDirectory: z.string().min(1).optional(),
    /** A checkpoint every k steps (and at the end); 0: none. Default 10. */
    checkpointEvery: z.number().int().min(0).default(value.checkpointEvery),
    /** `wasm`, `tensorflow`, `cpu`…; default: the best installed (LUDIC_BACKEND overrides). */
    backend: z.string().optional(),
    /** Progress bars on stderr. Default true. */
    progress: z.boolean().default(true),
    /** Where the run's lines go. Default `console.log`. */
    log: z.custom<(line: string) => void>((value) => typeof value === 'function').default(() => (line: string) => console.log(line)),
  })
}
export type ExampleOptions = z.output<ReturnType<typeof exampleOptionsSchema>>

/** An example's run, started by `startExampleRun` with the example's options. */
export interface ExampleRun {
  /** The backend `initTensors` chose. */
  readonly backend: string
  readonly runDirectory: string
  /** The directory holds a checkpoint: the trainer resumes from it (`resume: true`). */
  readonly resuming: boolean
  /** Seconds since `startExampleRun`. */
  seconds(): number
  /**
   * What is measured before self-play, once: on a fresh run `measure()` (the warm-up, then the first
   * evaluation), saved as `before.json`; a resumed run reads it back and skips the warm-up.
   */
  beforeTraining<T>(measure: () => Promise<T>): Promise<T>
  /**
   * The warm-up (`warmUp`: `createSftTrainer` for `sftSteps` updates at `sftLearningRate`, seeded with `seed`). Returns
   * the last update's NLL and the seconds taken.
   */
  warmUp(config: Omit<SftTrainerConfig, 'optimizer' | 'seed'>): Promise<{ nll: number | undefined; seconds: number }>
  /**
   * The settings of `createRlTrainer` that the options decide: PPO clip (`clipLow`, `clipHigh`), AdamW at
   * `learningRate`, the KL term when `klCoefficient` > 0 (annealed by a cosine to `klFinalRatio` × β over `steps`), the batch (`maxTokens` per move; `groupSize` plays per
   * reset seed, default 1; the games sampled at `temperature`), the seed, and this run's directory, checkpoints, resume and evaluations (the hook logs
   * `evaluate(step)` through `evaluationMetrics`). Spread them into the config.
   */
  trainerConfig<E extends Evaluated>(settings: { maxTokens: number; groupSize?: number; evaluate?: (step: number) => Promise<E> }): ExampleTrainerConfig
  /**
   * Every evaluation of the run: `before`, those the trainer logged (`loggedEvaluations` of its history), and the
   * last step's (`evaluate(stepCount)` unless it was logged); `after` is the last.
   */
  evaluations<E extends Evaluated>(
    before: E,
    trainer: { readonly history: readonly StepMetrics[]; readonly stepCount: number },
    evaluate: (step: number) => Promise<E>,
  ): Promise<{ evaluations: E[]; after: E }>
  /**
   * The report: `backend`, the options, before, after, the evaluations, an example's own fields, `seconds` and
   * `runDirectory`; written to `report.json` with `chart.svg` (`renderRunChart`) beside it, and returned. A chart
   * series gives its `points`, or `value`, a figure of each evaluation (`(evaluation) => evaluation.winRate`).
   */
  writeReport<E extends Evaluated, Extra extends object>(
    content: { options: Record<string, unknown>; before: E; after: E; evaluations: E[] } & Extra,
    chart: { title: string; series: readonly EvaluationSeries<E>[] },
  ): Promise<ExampleReport<E> & Extra>
}

/** The part of `createRlTrainer`'s config an `ExampleRun` fills in (`trainerConfig`). */
export type ExampleTrainerConfig = Pick<
  RlTrainerConfig,
  'policyLoss' | 'optimizer' | 'kl' | 'batch' | 'seed' | 'runDirectory' | 'checkpointEvery' | 'resume' | 'evaluateEvery' | 'evaluate'
>

/**
 * Starts an example's run with its parsed options: initialises `options.backend`, makes the run directory
 * (`options.runDirectory`, or `runs/<timestamp>` in `exampleDirectory`), notes whether it holds a checkpoint to
 * resume, and logs `backend …; run …`. `exampleDirectory` is a path or a URL (`new URL('..', import.meta.url)`).
 */
export async function startExampleRun(exampleDirectory: string | URL, options: ExampleOptions): Promise<ExampleRun> {
  const started = performance.now()
  const runtime = await initTensors({ ...(options.backend === undefined ? {} : { backend: options.backend as InitTensorsOptions['backend'] }), verbose: false })
  const runDirectory = await makeRunDirectory(exampleDirectory, options.runDirectory)
  const resuming = (await latestCheckpoint(runDirectory)) !== undefined
  options.log(`backend ${runtime.backend}; run ${runDirectory}${resuming ? ' (resuming)' : ''}`)
  const beforePath = join(runDirectory, 'before.json')
  const seconds = () => (performance.now() - started) / 1000
  return {
    backend: runtime.backend,
    runDirectory,
    resuming,
    seconds,
    async beforeTraining(measure) {
      if (resuming) return JSON.parse(await readFile(beforePath, 'utf8'))
      const before = await measure()
      await writeFile(beforePath, `${JSON.stringify(before, null, 2)}\n`)
      return before
    },
    async warmUp(config) {
      const { nll, seconds } = await warmUp({
        ...config,
        steps: options.sftSteps,
        learningRate: options.sftLearningRate,
        seed: options.seed,
        progress: options.progress,
      })
      return { nll, seconds }
    },
    trainerConfig({ maxTokens, groupSize = 1, evaluate }) {
      return {
        policyLoss: createPolicyLoss('ppo-clip', { clipLow: options.clipLow, clipHigh: options.clipHigh }),
        optimizer: { learningRate: options.learningRate },
        ...(options.klCoefficient > 0
          ? {
              kl: {
                coefficient: options.klCoefficient,
                estimator: options.klEstimator,
                ...(options.klFinalRatio < 1
                  ? { schedule: { type: 'warmup-cosine' as const, totalSteps: Math.max(1, options.steps - 1), minRatio: options.klFinalRatio } }
                  : {}),
                ...(options.klReferenceEvery > 0 ? { referenceSync: { every: options.klReferenceEvery, mixupAlpha: options.klReferenceMixup } } : {}),
              },
            }
          : {}),
        batch: {
          episodesPerStep: options.episodesPerStep,
          groupSize,
          ppoEpochs: options.ppoEpochs,
          miniBatchSize: options.miniBatchSize,
          maxTokens,
          temperature: options.temperature,
          concurrency: 256,
          maxGenerationBatch: 256,
        },
        seed: options.seed,
        runDirectory,
        checkpointEvery: options.checkpointEvery,
        resume: resuming,
        evaluateEvery: options.evaluateEvery,
        ...(evaluate === undefined ? {} : { evaluate: async ({ step }: EvaluationContext) => evaluationMetrics(await evaluate(step)) }),
      }
    },
    async evaluations(before, trainer, evaluate) {
      const evaluations = [before, ...loggedEvaluations<typeof before>(trainer.history)]
      const last = evaluations.at(-1)!
      const after = last.step === trainer.stepCount ? last : await evaluate(trainer.stepCount)
      if (after !== last) evaluations.push(after)
      return { evaluations, after }
    },
    async writeReport<E extends Evaluated, Extra extends object>(
      content: { options: Record<string, unknown>; before: E; after: E; evaluations: E[] } & Extra,
      chart: { title: string; series: readonly EvaluationSeries<E>[] },
    ) {
      const { options: given, before, after, evaluations, ...extra } = content
      const report = runReport({ backend: runtime.backend, options: given, started, runDirectory }, { before, after, evaluations, ...extra })
      const points = (series: EvaluationSeries<E>) =>
        'value' in series ? { ...series, points: evaluations.map((evaluation) => ({ step: evaluation.step, value: series.value(evaluation) })) } : series
      await writeReportFiles(runDirectory, { 'report.json': report, 'chart.svg': await renderRunChart(chart.title, chart.series.map(points)) })
      return report as unknown as ExampleReport<E> & Extra
    },
  }
}

/**
 * The league's Bradley–Terry ratings at the end of a run (Elo scale, mean 1000, over the pool's rating window):
 * each snapshot by the step it was taken after, the learner's, and those of the fixed opponents that played beside
 * the pool (the trainer's `opponents` with a `policy`, by policy id). Later snapshots rated above earlier ones is the
 * league's sign of progress.
 */
export interface LeagueRatings {
  snapshots: { step: number; rating: number }[]
  learner: number | undefined
  opponents: { id: string; rating: number }[]
}

/**
 * The pool's ratings in a step's metrics (`league/rating/<player>`: `snapshot-<step>`, `learner`, a fixed opponent's
 * id; e.g. the last entry of the trainer's `history`), snapshots sorted by step, opponents by id; a metric that is
 * not a finite number is skipped.
 */
export function leagueRatingsOf(metrics: Readonly<Record<string, unknown>> | undefined): LeagueRatings {
  const snapshots: { step: number; rating: number }[] = []
  const opponents: { id: string; rating: number }[] = []
  let learner: number | undefined
  for (const [key, value] of Object.entries(metrics ?? {})) {
    if (typeof value !== 'number' || !Number.isFinite(value) || !key.startsWith('league/rating/')) continue
    const player = key.slice('league/rating/'.length)
    const snapshot = /^snapshot-(\d+)$/.exec(player)
    if (snapshot !== null) snapshots.push({ step: Number(snapshot[1]), rating: value })
    else if (player === 'learner') learner = value
    else opponents.push({ id: player, rating: value })
  }
  return { snapshots: snapshots.sort((a, b) => a.step - b.step), learner, opponents: opponents.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) }
}

/**
 * `league-ratings.svg` in the run directory: each snapshot's rating by its step, with the learner's as a reference
 * line, and the same curve again with each fixed opponent's rating as the reference (one panel each). Returns its path.
 */
export async function writeLeagueRatingsChart(runDirectory: string, ratings: LeagueRatings): Promise<string> {
  const points = ratings.snapshots.map(({ step, rating }) => ({ step, value: rating }))
  const name = 'rating (Elo scale, mean 1000)'
  const chart = await renderRunChart(
    'The league: Bradley–Terry rating of each pool snapshot at the end of training',
    [
      {
        name,
        color: '#9467bd',
        points,
        ...(ratings.learner === undefined ? {} : { reference: { value: ratings.learner, label: `the learner ${ratings.learner.toFixed(0)}` } }),
      },
      ...ratings.opponents.map(({ id, rating }) => ({ name, color: '#8c564b', points, reference: { value: rating, label: `${id} ${rating.toFixed(0)}` } })),
    ],
    { xTitle: 'snapshot taken after step' },
  )
  const path = join(runDirectory, 'league-ratings.svg')
  await writeFile(path, chart)
  return path
}

/**
 * The league options of a self-play example (`exampleOptionsSchema().extend({ ...exampleLeagueOptions })`): the share
 * of training games in which one seat is a past snapshot of the model (the trainer's league, a snapshot pool in
 * `opponents`; 0, the default: none) and the pool's `every`, `keep` and `sampling` (the pool's defaults: 10, 20,
 * `uniform`). `leagueOpponents(options)` turns them into the trainer's `opponents` entry.
 */
export const exampleLeagueOptions = {
  /** Share of the training games with a past snapshot in one seat. 0 (the default): none. */
  leagueShare: z.number().min(0).max(1).default(0),
  /** A snapshot every this many steps (and at the start). The pool's default (10). */
  leagueEvery: snapshotPoolConfigSchema.shape.every,
  /** Snapshots kept. The pool's default (20). */
  leagueKeep: snapshotPoolConfigSchema.shape.keep,
  /** How a game's snapshot is drawn: `uniform`, `recency` or `pfsp`. The pool's default (`uniform`). */
  leagueSampling: snapshotPoolConfigSchema.shape.sampling,
}

/** The trainer's `opponents` entry of `exampleLeagueOptions`: the snapshot pool, or none when `leagueShare` is 0. */
export function leagueOpponents(options: {
  leagueShare: number
  leagueEvery: SnapshotPoolConfig['every']
  leagueKeep: SnapshotPoolConfig['keep']
  leagueSampling: SnapshotPoolConfig['sampling']
}): SnapshotPoolConfig[] {
  if (options.leagueShare === 0) return []
  return [{ pool: 'snapshots', share: options.leagueShare, every: options.leagueEvery, keep: options.leagueKeep, sampling: options.leagueSampling }]
}

/**
 * A `superRefine` for an example's options: the opponents' shares `names` (each in [0, 1]) add up to at most 1 (the
 * rest of the games is self-play), refused when the options are parsed — before the warm-up — naming the last
 * non-zero share and the sum.
 */
export function opponentSharesAtMostOne<Name extends string>(names: readonly Name[]) {
  return (options: Record<Name, number>, context: z.RefinementCtx): void => {
    const shares = names.filter((name) => options[name] > 0)
    const total = shares.reduce((sum, name) => sum + options[name], 0)
    if (total > 1 + 1e-9) {
      context.addIssue({
        code: 'custom',
        path: [shares.at(-1)!],
        input: options[shares.at(-1)!],
        message: `${shares.join(' + ')} add up to ${Number(total.toFixed(6))}: the opponents' shares must add up to at most 1`,
      })
    }
  }
}
