/**
 * GRPO vs RL-PLUS (Dong et al. 2025, https://arxiv.org/abs/2508.00222) on a task whose base model cannot reach
 * some solutions: `copy <word>` and `reverse <word>` (src/word-task.ts), warmed up on `copy` only. Per seed, the
 * warmed-up model is trained twice with the same rollouts budget (GRPO advantages, one on-policy update per step):
 * GRPO on its own samples, and RL-PLUS with one external demonstration (the correct answer) joining each group
 * (`externalDemonstrations` of the trainer, `createPolicyLoss('rl-plus')`). Measured on held-out words: pass@k for
 * k = 1 … n (the unbiased estimator from n samples per problem), before and after, per rule.
 *
 *   LUDIC_BACKEND=wasm npx tsx src/main.ts                 # 3 seeds, the table and chart in runs/<timestamp>/
 *   npx tsx src/main.ts --seeds 5 --steps 60
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createGrpo } from '@ludic/advantages'
import { deriveSeed, parseArgument, type ChatMessage } from '@ludic/core'
import { CausalLanguageModel, createLocalPolicy, createModel } from '@ludic/model'
import { createPolicyLoss } from '@ludic/objectives'
import { collect } from '@ludic/rollout'
import { initTensors, type InitTensorsOptions } from '@ludic/tensors'
import { Tokenizer, trainBpe } from '@ludic/tokenizer'
import { makeRunDirectory, runExampleMain } from '@ludic/report'
import { createRlTrainer, createSftTrainer, type DemonstrationSource } from '@ludic/trainer'
import { z } from 'zod'
import { passAtKChart } from './pass-at-k-chart.js'
import {
  createWordTask,
  parseWordObservation,
  passAtK,
  problemsOf,
  solveWordProblem,
  wordObservation,
  wordRules,
  wordSplit,
  type WordProblem,
  type WordRule,
} from './word-task.js'

export const mainOptionsSchema = z.strictObject({
  /** Seeds: each warms up its own model and trains it with both methods. Default 3. */
  seeds: z.number().int().min(1).max(16).default(3),
  /** RL steps per method and seed. Default 100. */
  steps: z.number().int().min(0).default(100),
  /** Warm-up updates (32 `copy` examples each). Default 150. */
  sftSteps: z.number().int().min(0).default(150),
  /** Problems per RL step; each is played `groupSize` times. Default 16. */
  problemsPerStep: z.number().int().positive().default(16),
  /** Rollouts per problem (GRPO's group). Default 8 (the released RL-PLUS script's). */
  groupSize: z.number().int().min(2).default(8),
  /** RL-PLUS: demonstrations joining each group. Default 1 (the released script's). */
  demonstrationsPerGroup: z.number().int().positive().default(1),
  /** AdamW learning rate of the RL updates. Default 1e-3. */
  learningRate: z.number().positive().default(1e-3),
  /** Warm-up learning rate. Default 3e-3. */
  sftLearningRate: z.number().positive().default(3e-3),
  /**
   * u of RL-PLUS's ratio r^m = π_θ/(¾π_θold + ¼u) (`uniformProbability`): 1 is the released code's; the paper's U
   * is uniform over the vocabulary, u = 1/V. Default: 1/V (see the README: with u = 1 an external token the policy
   * finds unlikely gets almost no gradient).
   */
  uniformProbability: z.number().min(1e-6).max(1).optional(),
  /** Held-out words (each asked with both rules). Default 40. */
  testWords: z.number().int().positive().default(40),
  /** n: samples per held-out problem; pass@k is reported for k = 1, 2, 4, … n. Default 64. */
  evaluationSamples: z.number().int().min(1).default(64),
  /** Where the run goes; default `runs/<timestamp>` in this folder. */
  runDirectory: z.string().min(1).optional(),
  /** `wasm`, `tensorflow`, `cpu`…; default: the best installed (LUDIC_BACKEND overrides). */
  backend: z.string().optional(),
  /** Progress bars on stderr. Default true. */
  progress: z.boolean().default(true),
  log: z.custom<(line: string) => void>((value) => typeof value === 'function').default(() => (line: string) => console.log(line)),
})
export type MainOptions = z.input<typeof mainOptionsSchema>

export const methods = ['base', 'grpo', 'rl-plus'] as const
export type Method = (typeof methods)[number]

/** pass@k per rule, for k = 1, 2, 4, … n. */
export type PassAtK = Record<WordRule, { k: number; value: number }[]>

export interface RunResult {
  seed: number
  method: Method
  passAtK: PassAtK
  /** Mean training reward of the policy's own samples over the last 5 steps (undefined for the base model). */
  trainReward?: number | undefined
  /** RL-PLUS: mean reward the environment gave the replayed demonstrations (1: all verified correct). */
  demonstrationReward?: number | undefined
  seconds: number
}

export interface Report {
  options: Record<string, unknown>
  backend: string
  results: RunResult[]
  /** The table, as written to table.md. */
  table: string[]
  seconds: number
  runDirectory: string
}

const endOfText = '<|endoftext|>'
/** The prompt: the observation and a newline; the answer follows. */
const chatTemplate = (messages: readonly ChatMessage[]) => `${messages.at(-1)?.content ?? ''}\n`

export async function main(options: MainOptions = {}): Promise<Report> {
  const parsed = parseArgument(mainOptionsSchema, options, 'options')
  const { log } = parsed
  const started = performance.now()
  const runtime = await initTensors({ ...(parsed.backend === undefined ? {} : { backend: parsed.backend as InitTensorsOptions['backend'] }), verbose: false })
  const runDirectory = await makeRunDirectory(new URL('..', import.meta.url), parsed.runDirectory)
  log(`backend ${runtime.backend}; run ${runDirectory}`)
  const { train, test } = wordSplit(0, parsed.testWords)
  const trainProblems = problemsOf(train)
  const testProblems = problemsOf(test)
  const tokenizer = Tokenizer.fromJSON(
    trainBpe(
      trainProblems.map((problem) => `${wordObservation(problem)}\n${solveWordProblem(problem)}`),
      { vocabSize: 280, specialTokens: [endOfText] },
    ),
    { eos_token: endOfText },
  )
  // The demonstrations: the correct answer of the group's problem (an oracle for the external model).
  const demonstrations: DemonstrationSource = ({ observation }) => {
    const problem = parseWordObservation(observation)
    return problem === undefined ? [] : [{ responses: [solveWordProblem(problem)] }]
  }

  const uniformProbability = parsed.uniformProbability ?? 1 / tokenizer.vocabSize
  const results: RunResult[] = []
  for (let seed = 0; seed < parsed.seeds; seed++) {
    const seedStarted = performance.now()
    // 1. The base model: warmed up on `copy` only.
    const base = createModel('tiny', { vocabSize: tokenizer.vocabSize, seed })
    const copyExamples = trainProblems
      .filter((problem) => problem.rule === 'copy')
      .map((problem) => ({ prompt: chatTemplate([{ role: 'user', content: wordObservation(problem) }]), response: solveWordProblem(problem) }))
    const sft = createSftTrainer({ model: base, tokenizer, examples: copyExamples, batchSize: 32, optimizer: { learningRate: parsed.sftLearningRate }, seed })
    const warmUp = await sft.run({ steps: parsed.sftSteps, progress: parsed.progress })
    sft.dispose()
    const evaluate = (model: CausalLanguageModel) => evaluatePassAtK(model, tokenizer, testProblems, parsed.evaluationSamples, seed)
    results.push({ seed, method: 'base', passAtK: await evaluate(base), seconds: (performance.now() - seedStarted) / 1000 })
    log(`seed ${seed}: warm-up nll ${warmUp.at(-1)?.loss.toFixed(3) ?? 'n/a'}; base ${summary(results.at(-1)!)}`)
    // 2. GRPO and RL-PLUS from the same base weights, the same rollouts per step.
    for (const method of ['grpo', 'rl-plus'] as const) {
      const methodStarted = performance.now()
      const model = new CausalLanguageModel(base.config, base.parameters())
      const trainer = createRlTrainer({
        model,
        tokenizer,
        chatTemplate,
        environments: [() => createWordTask(trainProblems)],
        advantage: createGrpo(),
        // One update per step on the whole batch: the ratio is 1 and neither loss clips; the only difference is the external data.
        policyLoss: method === 'grpo' ? createPolicyLoss('ppo-clip') : createPolicyLoss('rl-plus', { uniformProbability }),
        ...(method === 'rl-plus' ? { externalDemonstrations: { demonstrations, perGroup: parsed.demonstrationsPerGroup } } : {}),
        optimizer: { learningRate: parsed.learningRate },
        batch: {
          episodesPerStep: parsed.problemsPerStep,
          groupSize: parsed.groupSize,
          ppoEpochs: 1,
          miniBatchSize: parsed.problemsPerStep * (parsed.groupSize + parsed.demonstrationsPerGroup),
          maxTokens: 6,
          concurrency: 256,
          maxGenerationBatch: 256,
        },
        seed: deriveSeed('ludic.rl-plus-example', seed, method),
      })
      const history = await trainer.run({ steps: parsed.steps, progress: parsed.progress })
      trainer.dispose()
      const rewards = history.slice(-5).map((metrics) => metrics['reward/word-rules-v1/player'] ?? 0)
      results.push({
        seed,
        method,
        passAtK: await evaluate(model),
        trainReward: rewards.length === 0 ? undefined : mean(rewards),
        ...(method === 'rl-plus' ? { demonstrationReward: mean(history.map((metrics) => metrics['external/reward'] ?? 0)) } : {}),
        seconds: (performance.now() - methodStarted) / 1000,
      })
      model.dispose()
      log(`seed ${seed}: ${method} ${summary(results.at(-1)!)}`)
    }
    base.dispose()
  }

  const table = formatTable(results, parsed.evaluationSamples)
  for (const line of table) log(line)
  const seconds = (performance.now() - started) / 1000
  const report: Report = {
    options: Object.fromEntries(Object.entries(parsed).filter(([, value]) => typeof value !== 'function')),
    backend: runtime.backend,
    results,
    table,
    seconds,
    runDirectory,
  }
  await writeFile(join(runDirectory, 'report.json'), `${JSON.stringify(report, null, 2)}\n`)
  await writeFile(join(runDirectory, 'table.md'), `${table.join('\n')}\n`)
  await writeFile(join(runDirectory, 'chart.svg'), passAtKChart(meanCurves(results)))
  log(`${seconds.toFixed(0)} s on ${runtime.backend}; report.json, table.md and chart.svg in ${runDirectory}`)
  return report
}

/**
 * pass@k of `model` on `problems`: n samples per problem (temperature 1, one group of n per problem), c correct,
 * 1 − C(n − c, k)/C(n, k) averaged over the problems of each rule.
 */
export async function evaluatePassAtK(
  model: CausalLanguageModel,
  tokenizer: Tokenizer,
  problems: readonly WordProblem[],
  samples: number,
  seed: number,
): Promise<PassAtK> {
  const policy = createLocalPolicy({ model, tokenizer, chatTemplate, maxBatch: 512, seed, id: 'evaluated' })
  const result = await collect({
    environments: [() => createWordTask(problems)],
    policies: policy,
    seeds: problems.map((_, index) => index),
    groupSize: samples,
    concurrency: 512,
    maxBatchSize: 512,
    generation: { maxTokens: 6, temperature: 1 },
    samplingSeed: deriveSeed('ludic.rl-plus-evaluation', seed),
  })
  if (result.failures.length > 0) throw result.failures[0]!.error
  const correct = new Array<number>(problems.length).fill(0)
  for (const trajectory of result.trajectories) correct[trajectory.seed]! += (trajectory.returns.player ?? 0) > 0 ? 1 : 0
  const ks = kValues(samples)
  return Object.fromEntries(
    wordRules.map((rule) => {
      const indices = problems.flatMap((problem, index) => (problem.rule === rule ? [index] : []))
      return [rule, ks.map((k) => ({ k, value: mean(indices.map((index) => passAtK(samples, correct[index]!, k))) }))]
    }),
  ) as PassAtK
}

/** 1, 2, 4, … up to n (n itself included). */
export function kValues(n: number): number[] {
  const ks: number[] = []
  for (let k = 1; k < n; k *= 2) ks.push(k)
  ks.push(n)
  return ks
}

const mean = (values: readonly number[]) => (values.length === 0 ? 0 : values.reduce((total, value) => total + value, 0) / values.length)
const at = (curve: readonly { k: number; value: number }[], k: number) => curve.find((point) => point.k === k)?.value ?? Number.NaN
const percent = (value: number) => `${(100 * value).toFixed(1)}%`

function summary(result: RunResult): string {
  const n = result.passAtK.reverse.at(-1)!.k
  return `reverse pass@1 ${percent(at(result.passAtK.reverse, 1))}, pass@${n} ${percent(at(result.passAtK.reverse, n))}; copy pass@1 ${percent(at(result.passAtK.copy, 1))} (${result.seconds.toFixed(0)} s)`
}

/** One row per seed and method, then the mean over seeds per method: pass@1, pass@8 and pass@n per rule. */
export function formatTable(results: readonly RunResult[], n: number): string[] {
  const ks = [...new Set([1, Math.min(8, n), n])]
  const header = ['seed', 'method', ...wordRules.flatMap((rule) => ks.map((k) => `${rule} pass@${k}`)), 'train reward (last 5 steps)']
  const row = (seed: string, method: string, group: readonly RunResult[]) => [
    seed,
    method,
    ...wordRules.flatMap((rule) => ks.map((k) => percent(mean(group.map((result) => at(result.passAtK[rule], k)))))),
    group.every((result) => result.trainReward !== undefined) ? mean(group.map((result) => result.trainReward!)).toFixed(3) : '—',
  ]
  const lines = [header, header.map(() => '---')]
  for (const result of results) lines.push(row(String(result.seed), result.method, [result]))
  for (const method of methods)
    lines.push(
      row(
        'mean',
        method,
        results.filter((result) => result.method === method),
      ),
    )
  return lines.map((cells) => `| ${cells.join(' | ')} |`)
}

/** Per method and rule, pass@k averaged over the seeds. */
function meanCurves(results: readonly RunResult[]): { method: Method; rule: WordRule; points: { k: number; value: number }[] }[] {
  return methods.flatMap((method) =>
    wordRules.map((rule) => {
      const group = results.filter((result) => result.method === method)
      const ks = group[0]?.passAtK[rule].map((point) => point.k) ?? []
      return { method, rule, points: ks.map((k) => ({ k, value: mean(group.map((result) => at(result.passAtK[rule], k))) })) }
    }),
  )
}

runExampleMain(import.meta.url, main)
