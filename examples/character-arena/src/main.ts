/**
 * CharacterArena on the `roleplay-cpo` run: its start (after the warm-up), middle and end models and a baseline
 * (a scripted character that answers with one of its own card lines, ignoring the user) play the same contexts
 * (character, persona, seed) against the same user simulator with the same sampling seeds; the judge compares
 * every pair of conversations of a context in both orders (a disagreement is a tie); Bradley–Terry ratings on the
 * Elo scale with bootstrap 95% intervals, win rates, a Markdown table, JSON and a chart (Vega-Lite).
 * The judge is the rubric (no network), or any OpenAI-compatible model with `LUDIC_JUDGE_URL`.
 */
import { readdir, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRandom, deriveSeed, parseArgument, parseInput, type Completion, type PolicyV1 } from '@ludic/core'
import {
  characters,
  chatTemplate,
  characterPrompt,
  createRoleplayMix,
  createRoleplayPairwiseJudge,
  createUserSimulator,
  remoteJudgeFromEnvironment,
  trainRoleplayTokenizer,
} from '@ludic/example-roleplay-cpo/setup'
import { createLocalPolicy, loadModel, type CausalLanguageModel } from '@ludic/model'
import { roleplayPrompt } from '@ludic/roleplay'
import { createBatchingPolicy } from '@ludic/rollout'
import { initTensors, type InitTensorsOptions } from '@ludic/tensors'
import { makeRunDirectory, renderArenaChart, runExampleMain, runReport, writeReportFiles, type RunReport } from '@ludic/report'
import { runCharacterArena, type CharacterArenaResult } from '@ludic/trainer'
import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'

export const mainOptionsSchema = z.strictObject({
  /** A `roleplay-cpo` run directory (with `report.json` and `models/`). Default: the latest under `examples/roleplay-cpo/runs/`. */
  cpoRun: z.string().min(1).optional(),
  /** Contexts played by every competitor (each a character and persona drawn from its seed). Default 256. */
  contexts: z.number().int().positive().max(10_000).default(256),
  /** Seeds the contexts, sampling, the judge's shuffles and the bootstrap. Default 0. */
  seed: z.number().int().default(0),
  /** Bootstrap resamples of the ratings' intervals. Default 1000. */
  bootstrapSamples: z.number().int().positive().max(100_000).default(1000),
  /** Episodes played and comparisons judged at once (requests to a model are batched). Default 64. */
  concurrency: z.number().int().positive().max(1024).default(64),
  /** Where the results go; default `runs/<timestamp>` in this example's folder. */
  runDirectory: z.string().min(1).optional(),
  /** `wasm`, `tensorflow`, `cpu`…; default: the best installed (LUDIC_BACKEND overrides). */
  backend: z.string().optional(),
  log: z.custom<(line: string) => void>((value) => typeof value === 'function').default(() => (line: string) => console.log(line)),
})
export type MainOptions = z.input<typeof mainOptionsSchema>

/** What this example needs of the CPO run's `report.json`. */
const cpoReportSchema = z.object({
  options: z.object({ vocabSize: z.number().int(), maxTurns: z.number().int(), maxTokens: z.number().int(), seed: z.number().int() }),
  models: z.object({ start: z.string(), middle: z.string(), end: z.string() }),
  after: z.object({ step: z.number().int() }),
})

/** `report.json`: the backend and options, the CPO run, the judge, the competitors and their ratings. */
export type Report = RunReport<{
  cpoRun: string
  judge: string
  competitors: string[]
  arena: CharacterArenaResult['report']
  failures: number
  skippedComparisons: number
}>

export async function main(options: MainOptions = {}): Promise<Report> {
  const parsed = parseArgument(mainOptionsSchema, options, 'options')
  const { log, seed } = parsed
  const started = performance.now()
  const runtime = await initTensors({ ...(parsed.backend === undefined ? {} : { backend: parsed.backend as InitTensorsOptions['backend'] }), verbose: false })
  const cpoRun = parsed.cpoRun ?? (await latestCpoRun())
  const cpoReport = parseInput(cpoReportSchema, JSON.parse(await readFile(join(cpoRun, 'report.json'), 'utf8')), { source: join(cpoRun, 'report.json') })
  const runDirectory = await makeRunDirectory(new URL('..', import.meta.url), parsed.runDirectory)
  log(`backend ${runtime.backend}; CPO run ${cpoRun}; results in ${runDirectory}`)

  // The competitors: the CPO run's three models (same tokenizer, retrained deterministically) and the baseline.
  const tokenizer = trainRoleplayTokenizer(cpoReport.options.vocabSize)
  const models: CausalLanguageModel[] = []
  const competitors: { id: string; policy: PolicyV1 }[] = []
  for (const name of ['start', 'middle', 'end'] as const) {
    const model = await loadModel(cpoReport.models[name])
    models.push(model)
    const local = createLocalPolicy({ model, tokenizer, chatTemplate, maxBatch: 256, seed, id: name })
    competitors.push({ id: name, policy: createBatchingPolicy(local, { maxBatchSize: 256 }) })
  }
  competitors.push({ id: 'baseline', policy: createCardLineBaseline(seed) })

  const remoteJudge = remoteJudgeFromEnvironment()
  const judge = createRoleplayPairwiseJudge({ judge: remoteJudge, seed })
  const { maxTurns, maxTokens } = cpoReport.options
  const firstContextSeed = deriveSeed('ludic.character-arena', seed) % 2 ** 30
  const result = await runCharacterArena({
    competitors,
    contexts: Array.from({ length: parsed.contexts }, (_, index) => ({
      id: `context-${index}`,
      environment: () => createRoleplayMix({ maxTurns }),
      seed: firstContextSeed + index,
    })),
    opponents: { user: createUserSimulator(seed) },
    judge,
    maxTurns: 2 * maxTurns + 1,
    generation: { maxTokens, temperature: 1 },
    prompt: roleplayPrompt,
    samplingSeed: seed,
    bootstrap: { samples: parsed.bootstrapSamples, seed },
    concurrency: parsed.concurrency,
    onProgress: (progress) => {
      if (progress.completed % 100 === 0 || progress.completed === progress.total) log(`${progress.phase}: ${progress.completed} of ${progress.total}`)
    },
  })
  for (const model of models) model.dispose()

  const report: Report = runReport(
    { backend: runtime.backend, options: parsed, started, runDirectory },
    {
      cpoRun,
      judge: judge.identity.model,
      competitors: competitors.map((competitor) => competitor.id),
      arena: result.report,
      failures: result.failures.length,
      skippedComparisons: result.skippedComparisons,
    },
  )
  await writeReportFiles(runDirectory, {
    'report.json': report,
    'arena.md': [result.markdown],
    'judgements.jsonl': result.judgements,
    'chart.svg': await renderArenaChart(result.report, 'CharacterArena: the roleplay-cpo run (Elo scale, 95% bootstrap intervals)'),
  })
  log(result.markdown)
  log(`${report.seconds.toFixed(0)} s on ${runtime.backend}; ${tf.memory().numTensors} tensors left; report, table, judgements and chart in ${runDirectory}`)
  return report
}

/**
 * The baseline: a character that answers every line with one of its own card lines (drawn from the request's
 * seed), in character but without listening to the user. It finds its character from the system prompt.
 */
export function createCardLineBaseline(seed: number): PolicyV1 {
  const byPrompt = new Map(characters.map((character) => [characterPrompt(character), character]))
  return {
    specificationVersion: 'v1',
    id: 'baseline',
    async generate(requests): Promise<Completion[]> {
      return requests.map((request) => {
        const character = byPrompt.get(request.messages?.find((message) => message.role === 'system')?.content ?? '')
        const lines = character?.sampleLines ?? ['...']
        const text = createRandom(deriveSeed('ludic.card-line-baseline', seed, request.seed ?? 0)).choice(lines)
        return { text, promptTokenIds: new Int32Array(0), tokenIds: new Int32Array(0), logprobs: new Float32Array(0), finishReason: 'stop' }
      })
    },
  }
}

/** The most recent `roleplay-cpo` run that finished (has `report.json`). */
async function latestCpoRun(): Promise<string> {
  const runs = fileURLToPath(new URL('../../roleplay-cpo/runs/', import.meta.url))
  const names = await readdir(runs).catch(() => [] as string[])
  const finished: { path: string; time: number }[] = []
  for (const name of names) {
    const report = join(runs, name, 'report.json')
    const info = await stat(report).catch(() => undefined)
    if (info !== undefined) finished.push({ path: join(runs, name), time: info.mtimeMs })
  }
  const latest = finished.sort((a, b) => b.time - a.time)[0]
  if (latest === undefined)
    throw new Error(
      `no finished roleplay-cpo run under ${runs}: run \`npm start --workspace @ludic/example-roleplay-cpo\` first, or pass --cpo-run <directory>`,
    )
  return latest.path
}

runExampleMain(import.meta.url, main)
