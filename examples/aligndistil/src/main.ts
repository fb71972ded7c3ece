/**
 * DPO versus AlignDistil on a synthetic preference task with a known rule (`synthetic-preferences.ts`): a tiny model
 * made from scratch, warmed up by SFT on both kinds of replies, then trained three ways from the same warmed-up
 * weights, seed by seed, with the held-out preference accuracy against the rule measured every k steps:
 *
 * - `dpo`: DPO on the pairs (`createPreferenceTrainer` through `trainContrastiveDpoModels`) for `steps` updates;
 * - `aligndistil`: the DPO model of that run and a reverse-DPO model (the same `steps` on swapped pairs) are the
 *   teachers, then `createAlignDistilTrainer` distils them into a fresh copy for `steps` updates — the paper's view,
 *   the teachers' training not counted;
 * - `aligndistil-counted`: the same `steps` gradient steps in all: the teachers are the DPO and reverse-DPO models
 *   after `teacherSteps` updates each (copies taken during those runs), and distillation gets what is left,
 *   `steps − 2·teacherSteps`; its curve is plotted against all the gradient steps spent.
 *
 *   LUDIC_BACKEND=wasm npx tsx src/main.ts [--steps 120] [--seeds 0,1,2] [--evaluate-every 5]
 */
import { CausalLanguageModel, createModel } from '@ludic/model'
import { initTensors, type InitTensorsOptions } from '@ludic/tensors'
import { Tokenizer, trainBpe } from '@ludic/tokenizer'
import { makeRunDirectory, markdownPage, markdownTable, renderRunChart, runExampleMain, runReport, writeReportFiles } from '@ludic/report'
import {
  createAlignDistilTrainer,
  createSftTrainer,
  encodePreferencePair,
  preferenceAccuracy,
  trainContrastiveDpoModels,
  truncatePreferencePair,
  type PreferencePairIds,
} from '@ludic/trainer'
import { z } from 'zod'
import { generateRulePairs, pairKinds, type PairKind, type RulePair } from './synthetic-preferences.js'

const seedList = z.preprocess(
  (value) => (typeof value === 'string' ? value.split(',').map(Number) : typeof value === 'number' ? [value] : value),
  z.array(z.number().int()).min(1),
)

export const alignDistilExampleOptionsSchema = z.strictObject({
  /** Gradient steps of each arm (the budget). Default 120. */
  steps: z.number().int().min(3).default(120),
  /**
   * Updates of each teacher in the `aligndistil-counted` arm, which distils for `steps − 2·teacherSteps`. Default:
   * ⌊steps/3⌋.
   */
  teacherSteps: z.number().int().min(1).optional(),
  /** Pairs per update (DPO: two sequences a pair; AlignDistil: the prompt and chosen reply). Default 16. */
  batchSize: z.number().int().positive().default(16),
  /** AdamW's learning rate for DPO, the teachers and distillation (constant). Default 2e-3. */
  learningRate: z.number().positive().default(2e-3),
  /** β of DPO, which is AlignDistil's β₀. Default 0.1. */
  beta: z.number().positive().default(0.1),
  /** Evaluate every k gradient steps (and at step 0). Default 5. */
  evaluateEvery: z.number().int().positive().default(5),
  /** Seeds: the model's initialisation, the warm-up and every arm's order of pairs (`--seeds 0,1,2`). Default [0, 1, 2]. */
  seeds: seedList.default([0, 1, 2]),
  /** Training pairs (generated with seed 0). Default 1200. */
  trainPairs: z.number().int().min(4).default(1200),
  /** Held-out pairs (generated with seed 1), half of each kind. Default 200. */
  heldOutPairs: z.number().int().min(2).default(200),
  /** SFT warm-up updates on prompt + chosen and prompt + rejected replies alike. Default 150. */
  sftSteps: z.number().int().min(0).default(150),
  /** Warm-up learning rate. Default 3e-3. */
  sftLearningRate: z.number().positive().default(3e-3),
  /** Ids of the byte-level BPE trained on the training text. Default 384. */
  vocabSize: z.number().int().min(258).default(384),
  /** Width d of the `tiny` preset's layers (MLP 3d, 4 heads). Default 48. */
  hiddenSize: z.number().int().min(8).multipleOf(4).default(48),
  /** Layers. Default 2. */
  layers: z.number().int().min(1).default(2),
  /** Where the report goes. Default `runs/<timestamp>` in the example's folder. */
  runDirectory: z.string().min(1).optional(),
  /** `wasm`, `tensorflow`, `cpu`…; default: the best installed (LUDIC_BACKEND overrides). */
  backend: z.string().optional(),
  /** Progress bars on stderr. Default true. */
  progress: z.boolean().default(true),
  /** Where the run's lines go. Default `console.log`. */
  log: z.custom<(line: string) => void>((value) => typeof value === 'function').default(() => (line: string) => console.log(line)),
})
export type AlignDistilExampleOptions = z.input<typeof alignDistilExampleOptionsSchema>

export const arms = ['dpo', 'aligndistil', 'aligndistil-counted'] as const
export type ArmName = (typeof arms)[number]

/** Held-out preference accuracy at one point of an arm's training. */
export interface CurvePoint {
  /** Gradient steps spent by then (for `aligndistil-counted`, the teachers' 2·teacherSteps included). */
  step: number
  /** Share of held-out pairs whose implicit reward log π/π_ref prefers the chosen reply (a tie ½). */
  accuracy: number
  byKind: Record<PairKind, number>
}

export interface SeedResult {
  seed: number
  /** Token-mean NLL of the last warm-up update. */
  sftNll: number | undefined
  curves: Record<ArmName, CurvePoint[]>
  seconds: number
}

export interface AlignDistilReport {
  backend: string
  options: Record<string, unknown>
  trainPairs: number
  heldOutPairs: number
  teacherSteps: number
  results: SeedResult[]
  /** Per arm and evaluation step: the mean accuracy over seeds and the half-width of its 95% t interval. */
  summary: Record<ArmName, { step: number; mean: number; interval: number }[]>
  /** Per arm: the first evaluated step at which each seed reached 90% held-out accuracy (null: never). */
  stepsTo90: Record<ArmName, (number | null)[]>
  seconds: number
  runDirectory: string
}

const pairOf = (pair: RulePair) => ({ prompt: pair.prompt, chosen: pair.chosen, rejected: pair.rejected })

export async function main(input: AlignDistilExampleOptions = {}): Promise<AlignDistilReport> {
  const options = alignDistilExampleOptionsSchema.parse(input)
  const { log, steps, evaluateEvery, batchSize } = options
  const teacherSteps = options.teacherSteps ?? Math.floor(steps / 3)
  if (2 * teacherSteps >= steps)
    throw new Error(`teacherSteps (${teacherSteps}) must be below steps/2 (${steps / 2}): the counted arm distils for steps − 2·teacherSteps`)
  const started = performance.now()
  const runtime = await initTensors({ ...(options.backend === undefined ? {} : { backend: options.backend as InitTensorsOptions['backend'] }), verbose: false })
  const runDirectory = await makeRunDirectory(new URL('..', import.meta.url), options.runDirectory)

  const train = generateRulePairs(options.trainPairs, 0)
  const heldOut = generateRulePairs(options.heldOutPairs, 1)
  const endOfText = '<|end|>'
  const corpus = train.flatMap((pair) => [pair.prompt + pair.chosen, pair.prompt + pair.rejected])
  const tokenizer = Tokenizer.fromJSON(trainBpe(corpus, { vocabSize: options.vocabSize, specialTokens: [endOfText] }), { eos_token: endOfText })
  const maxLength = 64
  const encode = (pair: RulePair): PreferencePairIds => truncatePreferencePair(encodePreferencePair(pairOf(pair), { tokenizer }), maxLength, maxLength / 2)
  const heldOutByKind = Object.fromEntries(pairKinds.map((kind) => [kind, heldOut.filter((pair) => pair.kind === kind).map(encode)])) as Record<
    PairKind,
    PreferencePairIds[]
  >
  log(`${train.length} training and ${heldOut.length} held-out pairs; BPE of ${tokenizer.vocabSize} ids; backend ${runtime.backend}; run ${runDirectory}`)

  const results: SeedResult[] = []
  for (const seed of options.seeds) {
    const seedStarted = performance.now()
    const reference = createModel('tiny', {
      vocabSize: tokenizer.vocabSize,
      seed,
      overrides: { hiddenSize: options.hiddenSize, intermediateSize: 3 * options.hiddenSize, numHiddenLayers: options.layers, numAttentionHeads: 4 },
    })
    // Warm-up on both kinds of replies: the model can write either, and prefers neither by the rule.
    let sftNll: number | undefined
    if (options.sftSteps > 0) {
      const sft = createSftTrainer({
        model: reference,
        tokenizer,
        examples: train.flatMap((pair) => [
          { prompt: pair.prompt, response: pair.chosen },
          { prompt: pair.prompt, response: pair.rejected },
        ]),
        batchSize: 2 * batchSize,
        optimizer: { learningRate: options.sftLearningRate },
        seed,
      })
      sftNll = (await sft.run({ steps: options.sftSteps, progress: options.progress })).at(-1)?.loss
      sft.dispose()
    }
    const copy = (model: CausalLanguageModel) => new CausalLanguageModel(model.config, model.parameters())
    const measure = async (model: CausalLanguageModel, step: number): Promise<CurvePoint> => {
      const byKind = {} as Record<PairKind, number>
      let wins = 0
      for (const kind of pairKinds) {
        const evaluation = await preferenceAccuracy({ model, reference, pairs: heldOutByKind[kind], batchSize: 50 })
        byKind[kind] = evaluation.accuracy
        wins += evaluation.accuracy * evaluation.pairs
      }
      return { step, accuracy: wins / heldOut.length, byKind }
    }
    const start = await measure(reference, 0)
    const curves: Record<ArmName, CurvePoint[]> = { dpo: [start], aligndistil: [start], 'aligndistil-counted': [{ ...start }] }

    // DPO (the `dpo` arm, and the teacher of `aligndistil`) and reverse DPO; copies of both after `teacherSteps`.
    const early: Partial<Record<'dpo' | 'reverse-dpo', CausalLanguageModel>> = {}
    const { dpoModel, reverseDpoModel } = await trainContrastiveDpoModels({
      model: reference,
      tokenizer,
      pairs: train.map(pairOf),
      steps,
      batchSize,
      loss: { type: 'sigmoid', beta: options.beta },
      optimizer: { learningRate: options.learningRate },
      maxLength,
      seed,
      onStep: async (name, metrics, model) => {
        if (metrics.step === teacherSteps) early[name] = copy(model)
        if (name === 'dpo' && metrics.step % evaluateEvery === 0) curves.dpo.push(await measure(model, metrics.step))
      },
    })
    if (curves.dpo.at(-1)!.step !== steps) curves.dpo.push(await measure(dpoModel, steps))

    const distil = async (
      teachers: { dpoModel: CausalLanguageModel; reverseDpoModel: CausalLanguageModel },
      distilSteps: number,
      offset: number,
      curve: CurvePoint[],
    ) => {
      const policy = copy(reference)
      const trainer = createAlignDistilTrainer({
        model: policy,
        tokenizer,
        ...teachers,
        reference,
        pairs: train.map(pairOf),
        batchSize,
        steps: distilSteps,
        optimizer: { learningRate: options.learningRate },
        loss: { beta: options.beta },
        maxLength,
        seed,
      })
      await trainer.run({
        progress: options.progress,
        onStep: async (metrics) => {
          if ((offset + metrics.step) % evaluateEvery === 0 || metrics.step === distilSteps) curve.push(await measure(policy, offset + metrics.step))
        },
      })
      trainer.dispose()
      policy.dispose()
    }
    await distil({ dpoModel, reverseDpoModel }, steps, 0, curves.aligndistil)
    const counted = curves['aligndistil-counted']
    counted.push({ ...start, step: 2 * teacherSteps }) // the policy has not moved while its teachers trained
    await distil({ dpoModel: early.dpo!, reverseDpoModel: early['reverse-dpo']! }, steps - 2 * teacherSteps, 2 * teacherSteps, counted)
    for (const model of [dpoModel, reverseDpoModel, early.dpo!, early['reverse-dpo']!, reference]) model.dispose()

    const result: SeedResult = { seed, sftNll, curves, seconds: (performance.now() - seedStarted) / 1000 }
    results.push(result)
    log(
      `seed ${seed}: final held-out accuracy ${arms.map((arm) => `${arm} ${percent(curves[arm].at(-1)!.accuracy)}`).join(', ')} (${result.seconds.toFixed(0)} s)`,
    )
  }

  const summary = Object.fromEntries(arms.map((arm) => [arm, summarise(results.map((result) => result.curves[arm]))])) as AlignDistilReport['summary']
  const stepsTo90 = Object.fromEntries(
    arms.map((arm) => [arm, results.map((result) => result.curves[arm].find((point) => point.accuracy >= 0.9)?.step ?? null)]),
  ) as AlignDistilReport['stepsTo90']
  const run = { backend: runtime.backend, options, started, runDirectory }
  const report: AlignDistilReport = runReport(run, { trainPairs: train.length, heldOutPairs: heldOut.length, teacherSteps, results, summary, stepsTo90 })
  const table = reportTable(report)
  for (const line of table.split('\n')) log(line)
  const page = markdownPage(
    'DPO vs AlignDistil: held-out preference accuracy against the rule',
    `${report.trainPairs} training and ${report.heldOutPairs} held-out pairs, ${steps} gradient steps of ${batchSize} pairs per arm, seeds ${options.seeds.join(', ')}, backend ${report.backend}, ${report.seconds.toFixed(0)} s.`,
    table,
  )
  const colors: Record<ArmName, string> = { dpo: '#1f77b4', aligndistil: '#d62728', 'aligndistil-counted': '#2ca02c' }
  const chart = await renderRunChart(
    `Held-out preference accuracy (mean of ${options.seeds.length} seeds)`,
    arms.map((arm) => ({
      name: arm === 'aligndistil-counted' ? 'aligndistil, teachers counted in the budget' : arm === 'aligndistil' ? 'aligndistil, teachers not counted' : 'dpo',
      color: colors[arm],
      points: summary[arm].map(({ step, mean }) => ({ step, value: mean })),
      range: [0.4, 1] as const,
      reference: { value: 0.9, label: '90%' },
    })),
    { xTitle: 'gradient steps' },
  )
  await writeReportFiles(runDirectory, { 'report.json': report, 'report.md': page, 'chart.svg': chart })
  return report
}

/** Mean and 95% t-interval half-width over seeds at each step all curves share. */
function summarise(curves: readonly CurvePoint[][]): { step: number; mean: number; interval: number }[] {
  const steps = curves[0]!.map((point) => point.step).filter((step) => curves.every((curve) => curve.some((point) => point.step === step)))
  return steps.map((step) => {
    const values = curves.map((curve) => curve.find((point) => point.step === step)!.accuracy)
    const mean = values.reduce((total, value) => total + value, 0) / values.length
    const variance = values.length < 2 ? 0 : values.reduce((total, value) => total + (value - mean) ** 2, 0) / (values.length - 1)
    return { step, mean, interval: tQuantile975(values.length - 1) * Math.sqrt(variance / values.length) }
  })
}

/** The 97.5% quantile of Student's t with `degrees` degrees of freedom (0: no interval). */
function tQuantile975(degrees: number): number {
  const table = [0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]
  return degrees < table.length ? table[degrees]! : 1.96
}

/** The Markdown tables: mean ± 95% interval per arm and step, then every seed's accuracy, then steps to 90%. */
export function reportTable(report: Pick<AlignDistilReport, 'results' | 'summary' | 'stepsTo90' | 'teacherSteps'>): string {
  const steps = [...new Set(arms.flatMap((arm) => report.summary[arm].map((point) => point.step)))].sort((a, b) => a - b)
  const cell = (arm: ArmName, step: number) => {
    const point = report.summary[arm].find((item) => item.step === step)
    return point === undefined ? '' : `${percent(point.mean)} ± ${(100 * point.interval).toFixed(1)}`
  }
  const seedCell = (arm: ArmName, step: number) =>
    report.results.map((result) => result.curves[arm].find((point) => point.step === step)).every((point) => point === undefined)
      ? ''
      : report.results.map((result) => percent(result.curves[arm].find((point) => point.step === step)?.accuracy ?? Number.NaN)).join(' / ')
  const seeds = report.results.map((result) => result.seed).join(' / ')
  const counted = `aligndistil, teachers counted (2×${report.teacherSteps} teacher steps, then distillation)`
  const row = (step: number, figure: (arm: ArmName, step: number) => string) => [String(step), ...arms.map((arm) => figure(arm, step))]
  return [
    ...markdownTable(
      ['gradient steps', 'dpo', 'aligndistil, teachers not counted', counted],
      steps.map((step) => row(step, cell)),
    ),
    '',
    'Held-out preference accuracy against the rule, mean over seeds ± half-width of the 95% t interval.',
    '',
    ...markdownTable(
      ['gradient steps', `dpo (seeds ${seeds})`, 'aligndistil, not counted', 'aligndistil, counted'],
      steps.map((step) => row(step, seedCell)),
    ),
    '',
    `First evaluated step at ≥ 90% (per seed): ${arms.map((arm) => `${arm} ${report.stepsTo90[arm].map((step) => step ?? 'never').join(' / ')}`).join('; ')}.`,
  ].join('\n')
}

const percent = (value: number) => (Number.isNaN(value) ? '–' : `${(100 * value).toFixed(1)}%`)

runExampleMain(import.meta.url, main)
