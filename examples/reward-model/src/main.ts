/**
 * A Bradley–Terry reward model made from scratch learns a role-play preference, stay in character, from the
 * synthetic pairs of `data/preferences.jsonl` (see `generate-preferences.ts`): a byte-level BPE trained on the
 * training text, the `tiny` preset with a reward head, `createRewardModelTrainer`. Each seed trains one model with
 * the plain loss and one with ChARM's act-adaptive margin (same seed, same data, same order), and the held-out
 * pairwise accuracy of both is reported side by side (`report.json`, `report.md`).
 *
 *   LUDIC_BACKEND=wasm npx tsx src/main.ts [--steps 150] [--seeds 0,1] [--pairs 2000]
 */
import { mkdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { createRandom, deriveSeed, type ChatMessage, type PreferencePair } from '@ludic/core'
import { createModel } from '@ludic/model'
import { plainChatTemplate, type RewardModelLossOptions } from '@ludic/rewards'
import { initTensors, type InitTensorsOptions } from '@ludic/tensors'
import { Tokenizer, trainBpe } from '@ludic/tokenizer'
import { markdownPage, markdownTable, runExampleMain, runReport, writeReportFiles } from '@ludic/report'
import { createRewardModelTrainer, readPreferencePairs, type RewardModelEvaluation } from '@ludic/trainer'
import { z } from 'zod'
import { preferenceFileUrl } from './generate-preferences.js'

const seedList = z.preprocess(
  (value) => (typeof value === 'string' ? value.split(',').map(Number) : typeof value === 'number' ? [value] : value),
  z.array(z.number().int()).min(1),
)

export const rewardModelExampleOptionsSchema = z.strictObject({
  /** Updates per model. Default 150. */
  steps: z.number().int().min(1).default(150),
  /** Pairs per update. Default 32. */
  batchSize: z.number().int().positive().default(32),
  /** AdamW's peak learning rate (linear warm-up over the first 10% of steps, cosine decay to 10%). Default 1e-3. */
  learningRate: z.number().positive().default(1e-3),
  /** Seeds: each trains one model per margin (`--seeds 0,1,2`). Default [0, 1]. */
  seeds: seedList.default([0, 1]),
  /** How many pairs of the file to use (the first n). Default: all 2,000. */
  pairs: z.number().int().min(10).optional(),
  /** Share of the pairs held out (a seeded split, the same for every model). Default 0.2. */
  heldOutShare: z.number().gt(0).lt(1).default(0.2),
  /** Ids of the byte-level BPE trained on the training text (more ids, shorter sequences). Default 1024. */
  vocabSize: z.number().int().min(258).default(1024),
  /** Most tokens of prompt + reply. Default 96. */
  maxLength: z.number().int().min(16).default(96),
  /** Width d of the `tiny` preset's layers (its MLP 3d wide, 4 heads). Default 64. */
  hiddenSize: z.number().int().min(8).multipleOf(4).default(64),
  /** Layers. Default 2. */
  layers: z.number().int().min(1).default(2),
  /** Which act-adaptive margin: `probability-ratio` (to the model at initialisation) or `loss-difference`. Default `probability-ratio`. */
  actAdaptiveVariant: z.enum(['probability-ratio', 'loss-difference']).default('probability-ratio'),
  /** β of the act-adaptive margin. Default 0.1. */
  beta: z.number().positive().default(0.1),
  /**
   * λ of the SFT term on the chosen replies, in both arms (so they differ only by the margin): it trains the
   * language-model head the act-adaptive margin reads. Default 0.5.
   */
  sftCoefficient: z.number().min(0).default(0.5),
  /** Where the report goes. Default `runs/reward-model` in the example's folder. */
  runDirectory: z.string().min(1).optional(),
  /** `wasm`, `tensorflow`, `cpu`…; default: the best installed (LUDIC_BACKEND overrides). */
  backend: z.string().optional(),
  /** Progress bars on stderr. Default true. */
  progress: z.boolean().default(true),
  /** Where the run's lines go. Default `console.log`. */
  log: z.custom<(line: string) => void>((value) => typeof value === 'function').default(() => (line: string) => console.log(line)),
})
export type RewardModelExampleOptions = z.input<typeof rewardModelExampleOptionsSchema>

export const margins = ['none', 'act-adaptive'] as const
export type MarginName = (typeof margins)[number]

export interface ArmResult {
  margin: MarginName
  seed: number
  heldOut: RewardModelEvaluation
  /** Held-out accuracy on each kind of rejected reply. */
  byKind: { breaksRole: number; wrongVoice: number }
  finalTrainLoss: number
  seconds: number
}

export interface RewardModelReport {
  backend: string
  options: Record<string, unknown>
  trainPairs: number
  heldOutPairs: number
  results: ArmResult[]
  /** Mean held-out accuracy of each margin over the seeds. */
  meanAccuracy: Record<MarginName, number>
  seconds: number
  runDirectory: string
}

/** The text a tokenizer is trained on: every message of a pair, rendered as the reward model reads it. */
const pairText = (pair: PreferencePair): string => {
  const messages = (value: PreferencePair['chosen'] | undefined): readonly ChatMessage[] => (value === undefined || typeof value === 'string' ? [] : value)
  return plainChatTemplate([...messages(pair.prompt), ...messages(pair.chosen), ...messages(pair.rejected)], { addGenerationPrompt: false })
}

export async function main(input: RewardModelExampleOptions = {}): Promise<RewardModelReport> {
  const options = rewardModelExampleOptionsSchema.parse(input)
  const { log } = options
  const started = performance.now()
  const runtime = await initTensors({ ...(options.backend === undefined ? {} : { backend: options.backend as InitTensorsOptions['backend'] }), verbose: false })
  const runDirectory = options.runDirectory ?? fileURLToPath(new URL('../runs/reward-model/', import.meta.url))
  await mkdir(runDirectory, { recursive: true })

  const all = (await readPreferencePairs(fileURLToPath(preferenceFileUrl))).slice(0, options.pairs)
  const order = createRandom(deriveSeed('ludic.example.reward-model.split', 0)).shuffle(Array.from({ length: all.length }, (_, index) => index))
  const heldOutCount = Math.max(1, Math.round(options.heldOutShare * all.length))
  const heldOut = order.slice(0, heldOutCount).map((index) => all[index]!)
  const train = order.slice(heldOutCount).map((index) => all[index]!)
  const endOfText = '<|end|>'
  const tokenizer = Tokenizer.fromJSON(trainBpe(train.map(pairText), { vocabSize: options.vocabSize, specialTokens: [endOfText] }), { eos_token: endOfText })
  log(`${train.length} training and ${heldOut.length} held-out pairs; BPE of ${tokenizer.vocabSize} ids; backend ${runtime.backend}`)

  const results: ArmResult[] = []
  for (const seed of options.seeds) {
    for (const margin of margins) {
      const armStarted = performance.now()
      const model = createModel('tiny', {
        vocabSize: tokenizer.vocabSize,
        seed,
        overrides: { hiddenSize: options.hiddenSize, intermediateSize: 3 * options.hiddenSize, numHiddenLayers: options.layers, numAttentionHeads: 4 },
      })
      const loss: RewardModelLossOptions = {
        margin,
        actAdaptive: { variant: options.actAdaptiveVariant, beta: options.beta },
        sftCoefficient: options.sftCoefficient,
      }
      const trainer = createRewardModelTrainer({
        model,
        tokenizer,
        chatTemplate: plainChatTemplate,
        maxLength: options.maxLength,
        pairs: train,
        heldOut,
        batchSize: options.batchSize,
        optimizer: { learningRate: options.learningRate },
        schedule: { type: 'warmup-cosine', warmupSteps: Math.ceil(options.steps / 10), totalSteps: options.steps, minRatio: 0.1 },
        loss,
        seed,
      })
      const { history, evaluation } = await trainer.run({ steps: options.steps, progress: options.progress })
      const kind = (suffix: string) => trainer.heldOutPairs.filter((pair) => pair.id?.endsWith(suffix))
      const [breaksRole, wrongVoice] = [kind('breaks-role'), kind('wrong-voice')]
      const byKind = {
        breaksRole: breaksRole.length === 0 ? Number.NaN : (await trainer.evaluate(breaksRole)).accuracy,
        wrongVoice: wrongVoice.length === 0 ? Number.NaN : (await trainer.evaluate(wrongVoice)).accuracy,
      }
      const tail = history.slice(-10)
      const result: ArmResult = {
        margin,
        seed,
        heldOut: evaluation!,
        byKind,
        finalTrainLoss: tail.reduce((total, metrics) => total + metrics.loss, 0) / tail.length,
        seconds: (performance.now() - armStarted) / 1000,
      }
      results.push(result)
      log(
        `seed ${seed}, margin ${margin.padEnd(12)}: held-out accuracy ${percent(result.heldOut.accuracy)} ` +
          `(breaks role ${percent(byKind.breaksRole)}, wrong voice ${percent(byKind.wrongVoice)}), margin ${result.heldOut.margin.toFixed(2)}, ${result.seconds.toFixed(0)} s`,
      )
      trainer.dispose()
      model.dispose()
    }
  }

  const meanAccuracy = Object.fromEntries(
    margins.map((margin) => {
      const accuracies = results.filter((result) => result.margin === margin).map((result) => result.heldOut.accuracy)
      return [margin, accuracies.reduce((total, value) => total + value, 0) / accuracies.length]
    }),
  ) as Record<MarginName, number>
  const report: RewardModelReport = runReport(
    { backend: runtime.backend, options, started, runDirectory },
    { trainPairs: train.length, heldOutPairs: heldOut.length, results, meanAccuracy },
  )
  const table = reportTable(report)
  for (const line of table.split('\n')) log(line)
  const summary = `${report.trainPairs} training and ${report.heldOutPairs} held-out pairs, ${options.steps} steps of ${options.batchSize} pairs, backend ${report.backend}, ${report.seconds.toFixed(0)} s.`
  await writeReportFiles(runDirectory, { 'report.json': report, 'report.md': markdownPage('Reward model: held-out pairwise accuracy', summary, table) })
  return report
}

/** The Markdown table: one row per seed, the accuracy of each margin side by side, then the means. */
export function reportTable(report: Pick<RewardModelReport, 'results' | 'meanAccuracy'>): string {
  const seeds = [...new Set(report.results.map((result) => result.seed))]
  const cell = (seed: number, margin: MarginName) => {
    const result = report.results.find((item) => item.seed === seed && item.margin === margin)
    return result === undefined ? '–' : `${percent(result.heldOut.accuracy)} (${percent(result.byKind.breaksRole)} / ${percent(result.byKind.wrongVoice)})`
  }
  return [
    ...markdownTable(
      ['seed', 'no margin', 'act-adaptive margin'],
      [
        ...seeds.map((seed) => [String(seed), ...margins.map((margin) => cell(seed, margin))]),
        ['mean', ...margins.map((margin) => percent(report.meanAccuracy[margin]))],
      ],
    ),
    '',
    'Held-out pairwise accuracy (in brackets: on pairs whose rejected reply breaks the role / speaks in another voice).',
  ].join('\n')
}

const percent = (value: number) => (Number.isNaN(value) ? '–' : `${(100 * value).toFixed(1)}%`)

runExampleMain(import.meta.url, main)
