/**
 * Flow of Reasoning (FoR) vs GRPO vs SFT-only on the Game of 24, with a tiny model made from scratch. A
 * byte-level BPE is trained on the task's text, the model is warmed up by SFT on solver solutions (steps) of
 * training problems, then, from that same warm-up and for each seed, GRPO (`createRlTrainer`, groups of
 * `samplesPerProblem`) and FoR (`createFlowOfReasoningTrainer`) train on the same training problems with the
 * same number of sampled trajectories per step. On held-out problems every model draws N trajectories per
 * problem from its policy restricted to valid steps: pass@1, the pass@k curve, and the number of distinct
 * correct solutions (canonical expressions) per problem, with intervals over seeds and over problems.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createGrpo } from '@ludic/advantages'
import { parseArgument } from '@ludic/core'
import { createGame24, game24Split } from '@ludic/games'
import { createModel, loadModel, saveModel, type CausalLanguageModel } from '@ludic/model'
import { createPolicyLoss } from '@ludic/objectives'
import { runExampleMain } from '@ludic/report'
import { createFlowOfReasoningTrainer, createRlTrainer } from '@ludic/trainer'
import { exampleOptionsSchema, startExampleRun } from '@ludic/trainer/example'
import { z } from 'zod'
import { renderComparisonChart } from './comparison-chart.js'
import {
  bootstrapInterval,
  evaluateDiversity,
  kValues,
  passAtK,
  seedInterval,
  summarise,
  type Interval,
  type ProblemResult,
  type Summary,
} from './diversity-evaluation.js'
import { chatTemplate, game24Tasks, promptOfView, solverExamples, trainGame24Tokenizer } from './game24-setup.js'
import { trainStepwiseGrpo } from './stepwise-grpo.js'

/** The shared options (`exampleOptionsSchema`) the comparison leaves alone: refused unless at their defaults. */
const unusedSharedOptions = ['temperature', 'klFinalRatio', 'klEstimator', 'klReferenceEvery', 'klReferenceMixup', 'evaluateEvery', 'checkpointEvery'] as const
/** The held-out problems (`game24Split`'s test split): `evaluationEpisodes` takes at most these. */
const heldOutProblems = 100

const sharedDefaults = {
  steps: 150,
  sftSteps: 300,
  episodesPerStep: 1,
  ppoEpochs: 1,
  miniBatchSize: 64,
  learningRate: 2e-4,
  sftLearningRate: 2e-3,
  klCoefficient: 0,
  evaluationEpisodes: 50,
  vocabSize: 384,
  checkpointEvery: 0,
}
const sharedSchema = exampleOptionsSchema(sharedDefaults)
const unusedDefaults = sharedSchema.parse({})

export const mainOptionsSchema = sharedSchema
  .extend({
    /** Seeds of the RL phase (GRPO and FoR each run once per seed from the shared warm-up; the evaluation sampling too). Default 3. */
    seeds: z.number().int().min(1).max(20).default(3),
    /** Trajectories per problem per step: GRPO's group size and FoR's n. Default 4 (FoR's n_samples). */
    samplesPerProblem: z.number().int().min(2).max(64).default(4),
    /** Training problems the RL phase draws from (the first of the training split): FoR's per-problem log Z and buffer need repeats. Default 32. */
    trainingProblems: z.number().int().positive().max(1262).default(32),
    /** Training problems whose solver solutions make the warm-up. Default 1262 (all). */
    sftProblems: z.number().int().positive().max(1262).default(1262),
    /** Distinct solutions per warm-up problem (each as one of its step orders, drawn with the seed). Default 1. */
    sftSolutionsPerProblem: z.number().int().positive().max(64).default(1),
    /** N: samples per held-out problem (pass@k for k = 1, 2, 4, … N). Default 16. */
    evaluationSamples: z.number().int().min(1).max(256).default(16),
    /** FoR's log Z: `learned` per problem, or `batch-mean` (the batch's estimate, FoR's BlocksWorld code). Default `learned`. */
    logPartition: z.enum(['learned', 'batch-mean']).default('learned'),
    /** Width of the model (`tiny`'s layout: 2 layers, 4 heads, MLP 3×). Default 64. */
    hiddenSize: z.number().int().min(8).max(512).default(64),
  })
  .superRefine((options, context) => {
    // Shared options this comparison does not use (each method has its own sampling, KL and schedule): refused when set.
    for (const name of unusedSharedOptions) {
      if (options[name] !== unusedDefaults[name])
        context.addIssue({
          code: 'custom',
          path: [name],
          message: `game24-diversity does not use it (the methods keep their own settings); leave it at ${JSON.stringify(unusedDefaults[name])}`,
        })
    }
    if (options.evaluationEpisodes > heldOutProblems)
      context.addIssue({
        code: 'custom',
        path: ['evaluationEpisodes'],
        message: `the held-out split holds ${heldOutProblems} problems: at most ${heldOutProblems}`,
      })
  })
export type MainOptions = z.input<typeof mainOptionsSchema>

export const methods = ['SFT-only', 'GRPO (free text)', 'GRPO (valid steps)', 'FoR'] as const
export type Method = (typeof methods)[number]

/** One method at one seed: its held-out figures, what its training cost, and each problem's counts. */
export interface MethodRun {
  method: Method
  seed: number
  summary: Summary
  /** Trajectories the loss was computed on, fresh policy samples among them, and trajectories scored by the reward. */
  trajectoriesTrainedOn: number
  freshSamples: number
  rewardCalls: number
  /** Share of fresh training samples that solved their problem. */
  trainingSuccessRate: number
  trainingSeconds: number
  evaluationSeconds: number
  problems: ProblemResult[]
}

export interface Comparison {
  /** Over seeds (mean ± t interval of the seeds' means) and over problems (bootstrap, seeds averaged per problem). */
  methods: Record<
    Method,
    { passAt1: { seeds: Interval; problems: Interval }; passAtN: { seeds: Interval; problems: Interval }; distinct: { seeds: Interval; problems: Interval } }
  >
  /** FoR minus the other method, per problem (seeds averaged), bootstrap over problems. */
  differences: Record<string, { passAt1: Interval; distinct: Interval }>
  /** More distinct correct solutions (interval above 0) at equal or better pass@1 (interval not below 0). */
  reproduced: Record<string, boolean>
}

export interface Report {
  backend: string
  options: Record<string, unknown>
  sftNll: number | undefined
  sftExamples: number
  runs: MethodRun[]
  comparison: Comparison
  seconds: number
  runDirectory: string
}

export async function main(options: MainOptions = {}): Promise<Report> {
  const parsed = parseArgument(mainOptionsSchema, options, 'options')
  const { log } = parsed
  const run = await startExampleRun(new URL('..', import.meta.url), parsed)
  const { train, test } = game24Split({ seed: 0, testSize: heldOutProblems })
  const trainingProblems = train.slice(0, parsed.trainingProblems)
  const evaluationProblems = test.slice(0, parsed.evaluationEpisodes)
  const seeds = Array.from({ length: parsed.seeds }, (_, index) => parsed.seed + index)

  // 1. Tokenizer and a tiny model from scratch, warmed up on solver solutions of training problems (shared by every seed).
  const tokenizer = trainGame24Tokenizer(train.slice(0, 200), parsed.vocabSize)
  const model = createModel('tiny', {
    vocabSize: tokenizer.vocabSize,
    seed: parsed.seed,
    overrides: { hiddenSize: parsed.hiddenSize, intermediateSize: 3 * parsed.hiddenSize },
  })
  const examples = solverExamples(train.slice(0, parsed.sftProblems), parsed.sftSolutionsPerProblem, parsed.seed)
  const warmUp = await run.warmUp({ model, tokenizer, examples, batchSize: 32 })
  const sftDirectory = join(run.runDirectory, 'models', 'sft')
  await saveModel(model, sftDirectory)
  log(
    `warm-up: ${examples.length} (prompt, step) examples of solver solutions, ${parsed.sftSteps} updates, nll ${warmUp.nll?.toFixed(3) ?? 'n/a'}, ${warmUp.seconds.toFixed(0)} s`,
  )

  const runs: MethodRun[] = []
  const evaluate = async (
    method: Method,
    seed: number,
    evaluated: CausalLanguageModel,
    training: Omit<MethodRun, 'method' | 'seed' | 'summary' | 'problems' | 'evaluationSeconds'>,
  ) => {
    const started = performance.now()
    const problems = await evaluateDiversity(evaluated, tokenizer, evaluationProblems, { samples: parsed.evaluationSamples, seed })
    const result: MethodRun = {
      method,
      seed,
      summary: summarise(problems, parsed.evaluationSamples),
      ...training,
      evaluationSeconds: (performance.now() - started) / 1000,
      problems,
    }
    runs.push(result)
    log(
      `${method} seed ${seed}: pass@1 ${result.summary.passAtK['1']!.toFixed(3)}, pass@${parsed.evaluationSamples} ${result.summary.passAtK[parsed.evaluationSamples]!.toFixed(3)}, distinct correct ${result.summary.distinctSolutions.toFixed(2)}/problem (train ${result.trainingSeconds.toFixed(0)} s, eval ${result.evaluationSeconds.toFixed(0)} s)`,
    )
  }

  for (const seed of seeds) {
    // 2a. SFT-only: the warm-up itself, sampled with this seed.
    await evaluate('SFT-only', seed, model, { trajectoriesTrainedOn: 0, freshSamples: 0, rewardCalls: 0, trainingSuccessRate: 0, trainingSeconds: 0 })

    // 2b. GRPO (free text): createRlTrainer on the Game of 24 environment, groups of samplesPerProblem episodes, PPO clip.
    const grpoModel = await loadModel(sftDirectory)
    let started = performance.now()
    const grpo = createRlTrainer({
      model: grpoModel,
      tokenizer,
      environments: [() => createGame24({ problems: trainingProblems.map((problem) => [...problem]) })],
      advantage: createGrpo(),
      policyLoss: createPolicyLoss('ppo-clip', { clipLow: 0.2, clipHigh: 0.2 }),
      ...(parsed.klCoefficient > 0 ? { kl: { coefficient: parsed.klCoefficient } } : {}),
      prompt: promptOfView,
      chatTemplate,
      optimizer: { learningRate: parsed.learningRate },
      batch: {
        episodesPerStep: parsed.episodesPerStep,
        groupSize: parsed.samplesPerProblem,
        ppoEpochs: parsed.ppoEpochs,
        miniBatchSize: parsed.miniBatchSize,
        maxTokens: 16,
        maxTurns: 3,
      },
      seed,
      runDirectory: join(run.runDirectory, `grpo-seed-${seed}`),
    })
    const grpoHistory = await grpo.run({ steps: parsed.steps, progress: parsed.progress })
    grpo.dispose()
    const grpoEpisodes = grpoHistory.reduce((total, metrics) => total + (metrics.episodes ?? 0), 0)
    await evaluate('GRPO (free text)', seed, grpoModel, {
      trajectoriesTrainedOn: grpoEpisodes,
      freshSamples: grpoEpisodes,
      rewardCalls: grpoEpisodes,
      trainingSuccessRate:
        grpoHistory.reduce((total, metrics) => total + (metrics['reward/game-of-24-v1/player'] ?? 0) * (metrics.episodes ?? 0), 0) / Math.max(1, grpoEpisodes),
      trainingSeconds: (performance.now() - started) / 1000,
    })
    grpoModel.dispose()

    // 2c. GRPO over the valid steps (FoR's action space): the same sampled trajectories per step, reward 1/0.
    const restrictedModel = await loadModel(sftDirectory)
    started = performance.now()
    const restrictedHistory = await trainStepwiseGrpo(restrictedModel, tokenizer, trainingProblems, {
      steps: parsed.steps,
      problemsPerStep: parsed.episodesPerStep,
      groupSize: parsed.samplesPerProblem,
      learningRate: parsed.learningRate,
      seed,
    })
    const restrictedSamples = parsed.steps * parsed.episodesPerStep * parsed.samplesPerProblem
    await evaluate('GRPO (valid steps)', seed, restrictedModel, {
      trajectoriesTrainedOn: restrictedSamples,
      freshSamples: restrictedSamples,
      rewardCalls: restrictedSamples,
      trainingSuccessRate: mean(restrictedHistory.map((entry) => entry.successRate)),
      trainingSeconds: (performance.now() - started) / 1000,
    })
    restrictedModel.dispose()

    // 2d. FoR: the same problems per step and samplesPerProblem trajectories each (sampled, or replayed), plus local search.
    const forModel = await loadModel(sftDirectory)
    started = performance.now()
    const flow = createFlowOfReasoningTrainer({
      model: forModel,
      tokenizer,
      ...game24Tasks(trainingProblems),
      steps: parsed.steps,
      problemsPerStep: parsed.episodesPerStep,
      samplesPerProblem: parsed.samplesPerProblem,
      optimizer: { learningRate: parsed.learningRate },
      logPartition: { mode: parsed.logPartition },
      seed,
      runDirectory: join(run.runDirectory, `for-seed-${seed}`),
    })
    const forHistory = await flow.run()
    flow.dispose()
    const fresh = forHistory.reduce((total, metrics) => total + metrics.freshSamples, 0)
    await evaluate('FoR', seed, forModel, {
      trajectoriesTrainedOn: forHistory.reduce((total, metrics) => total + metrics.trajectories, 0),
      freshSamples: fresh,
      rewardCalls: fresh + (fresh / parsed.samplesPerProblem) * 16,
      trainingSuccessRate: forHistory.reduce((total, metrics) => total + metrics.freshSuccesses, 0) / Math.max(1, fresh),
      trainingSeconds: (performance.now() - started) / 1000,
    })
    forModel.dispose()
  }
  model.dispose()

  // 3. The comparison, the table and the chart.
  const comparison = compare(runs, parsed.evaluationSamples, parsed.seed)
  const table = renderTable(runs, comparison, parsed.evaluationSamples)
  await writeFile(join(run.runDirectory, 'table.md'), table)
  const colors: Record<Method, string> = { 'SFT-only': '#7f7f7f', 'GRPO (free text)': '#9ecae1', 'GRPO (valid steps)': '#1f77b4', FoR: '#d62728' }
  await writeFile(
    join(run.runDirectory, 'chart.svg'),
    renderComparisonChart(
      `Game of 24, held-out: ${parsed.seeds} seeds, ${evaluationProblems.length} problems, N = ${parsed.evaluationSamples}`,
      methods.map((method) => ({
        name: method,
        color: colors[method],
        passAtK: kValues(parsed.evaluationSamples).map(
          (k) => [k, mean(runs.filter((entry) => entry.method === method).map((entry) => entry.summary.passAtK[k]!))] as [number, number],
        ),
        distinct: comparison.methods[method].distinct.seeds,
      })),
      parsed.evaluationSamples,
    ),
  )
  const report: Report = {
    backend: run.backend,
    options: Object.fromEntries(Object.entries(parsed).filter(([, value]) => typeof value !== 'function')),
    sftNll: warmUp.nll,
    sftExamples: examples.length,
    runs,
    comparison,
    seconds: run.seconds(),
    runDirectory: run.runDirectory,
  }
  await writeFile(join(run.runDirectory, 'report.json'), `${JSON.stringify(report, null, 2)}\n`)
  log(table)
  log(`${report.seconds.toFixed(0)} s on ${run.backend}; report.json, table.md and chart.svg in ${run.runDirectory}`)
  return report
}

const mean = (values: readonly number[]) => values.reduce((total, value) => total + value, 0) / Math.max(1, values.length)

/** Per-problem values of a method, averaged over its seeds (problems in evaluation order). */
function perProblem(runs: readonly MethodRun[], method: Method, value: (result: ProblemResult) => number): number[] {
  const own = runs.filter((entry) => entry.method === method)
  return own[0]!.problems.map((_, index) => mean(own.map((entry) => value(entry.problems[index]!))))
}

export function compare(runs: readonly MethodRun[], samples: number, seed: number): Comparison {
  const passAt1 = (result: ProblemResult) => passAtK(samples, result.correct, 1)
  const passAtN = (result: ProblemResult) => passAtK(samples, result.correct, samples)
  const distinct = (result: ProblemResult) => result.distinctSolutions
  const figures = (method: Method, value: (result: ProblemResult) => number, name: string) => ({
    seeds: seedInterval(runs.filter((entry) => entry.method === method).map((entry) => mean(entry.problems.map(value)))),
    problems: bootstrapInterval(perProblem(runs, method, value), seed + name.length),
  })
  const difference = (other: Method, value: (result: ProblemResult) => number) => {
    const flow = perProblem(runs, 'FoR', value)
    const baseline = perProblem(runs, other, value)
    return bootstrapInterval(
      flow.map((entry, index) => entry - baseline[index]!),
      seed + other.length,
    )
  }
  const methodsFigures = Object.fromEntries(
    methods.map((method) => [
      method,
      { passAt1: figures(method, passAt1, 'passAt1'), passAtN: figures(method, passAtN, 'passAtN'), distinct: figures(method, distinct, 'distinct') },
    ]),
  ) as Comparison['methods']
  const differences = Object.fromEntries(
    methods
      .filter((method) => method !== 'FoR')
      .map((other) => [`FoR − ${other}`, { passAt1: difference(other, passAt1), distinct: difference(other, distinct) }]),
  )
  const reproduced = Object.fromEntries(
    Object.entries(differences).map(([name, entry]) => [name, entry.distinct.low > 0 && entry.passAt1.high >= 0]),
  ) as Comparison['reproduced']
  return { methods: methodsFigures, differences, reproduced }
}

const formatInterval = (interval: Interval, digits = 3) =>
  `${interval.mean.toFixed(digits)} [${interval.low.toFixed(digits)}, ${interval.high.toFixed(digits)}]`

export function renderTable(runs: readonly MethodRun[], comparison: Comparison, samples: number): string {
  const ks = kValues(samples)
  const lines = [
    `| method | seed | ${ks.map((k) => `pass@${k}`).join(' | ')} | distinct correct / problem | distinct correct step sequences | trained on | fresh samples | reward calls | train success | train s | eval s |`,
    `|---|---|${ks.map(() => '---|').join('')}---|---|---|---|---|---|---|---|`,
    ...runs.map(
      (entry) =>
        `| ${entry.method} | ${entry.seed} | ${ks.map((k) => entry.summary.passAtK[k]!.toFixed(3)).join(' | ')} | ${entry.summary.distinctSolutions.toFixed(2)} | ${entry.summary.distinctTrajectories.toFixed(2)} | ${entry.trajectoriesTrainedOn} | ${entry.freshSamples} | ${Math.round(entry.rewardCalls)} | ${entry.trainingSuccessRate.toFixed(3)} | ${entry.trainingSeconds.toFixed(0)} | ${entry.evaluationSeconds.toFixed(0)} |`,
    ),
    '',
    `Means with 95% intervals: over seeds (t interval of the seeds' means) | over problems (bootstrap, seeds averaged per problem).`,
    '',
    `| method | pass@1 (seeds) | pass@1 (problems) | pass@${samples} (seeds) | distinct correct (seeds) | distinct correct (problems) |`,
    '|---|---|---|---|---|---|',
    ...methods.map((method) => {
      const figures = comparison.methods[method]
      return `| ${method} | ${formatInterval(figures.passAt1.seeds)} | ${formatInterval(figures.passAt1.problems)} | ${formatInterval(figures.passAtN.seeds)} | ${formatInterval(figures.distinct.seeds, 2)} | ${formatInterval(figures.distinct.problems, 2)} |`
    }),
    '',
    '| difference (paired by problem, bootstrap) | pass@1 | distinct correct / problem | FoR claim (more distinct at equal or better accuracy) |',
    '|---|---|---|---|',
    ...Object.entries(comparison.differences).map(
      ([name, entry]) =>
        `| ${name} | ${formatInterval(entry.passAt1)} | ${formatInterval(entry.distinct, 2)} | ${comparison.reproduced[name] ? 'reproduced' : 'not reproduced'} |`,
    ),
    '',
  ]
  return lines.join('\n')
}

runExampleMain(import.meta.url, main)
