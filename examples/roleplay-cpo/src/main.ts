/**
 * Role-play by CPO (comparative policy optimisation) on a model made from scratch: train a byte-level BPE on
 * dialogue made from Ludic's characters, warm a `tiny` transformer up on that dialogue (good replies mixed with
 * replies that break character, ignore the user, repeat or cross the knowledge boundary), then for each context
 * sample G replies, have a judge rank the group (twice, shuffled), and train with GRPO on the scores and PPO.
 * The default judge needs no network: the rubric (in character, knowledge boundary, answers the user, no
 * repetition) as a ranking function. With `LUDIC_JUDGE_URL` (+ `LUDIC_JUDGE_KEY`, `LUDIC_JUDGE_MODEL`) any
 * OpenAI-compatible model judges instead. Measured every few steps: the absolute rubric score of sampled replies
 * on held-out seeds (the judged reward), per dimension, and the judge's agreement between its two shuffles.
 */
import { join } from 'node:path'
import { deriveSeed, parseArgument, type Trajectory } from '@ludic/core'
import { createLocalPolicy, createModel, saveModel, type CausalLanguageModel } from '@ludic/model'
import { roleplayPrompt } from '@ludic/roleplay'
import { collect } from '@ludic/rollout'
import { runExampleMain, type ExampleReport } from '@ludic/report'
import { createCpoTrainer, type StepMetrics } from '@ludic/trainer'
import { exampleOptionsSchema, startExampleRun } from '@ludic/trainer/example'
import type { Tokenizer } from '@ludic/tokenizer'
import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import {
  chatTemplate,
  createRoleplayGroupJudge,
  createRoleplayMix,
  createUserSimulator,
  remoteJudgeFromEnvironment,
  rubricScore,
  trainRoleplayTokenizer,
  warmUpDialogue,
  type RubricDimension,
} from './roleplay-setup.js'

export const mainOptionsSchema = exampleOptionsSchema({
  steps: 60,
  sftSteps: 300,
  episodesPerStep: 16,
  miniBatchSize: 64,
  learningRate: 5e-4,
  klCoefficient: 0.05,
  evaluateEvery: 10,
  evaluationEpisodes: 128,
  vocabSize: 1024,
  checkpointEvery: 10,
}).extend({
  /** G: replies (or whole conversations) per context, ranked together by the judge. Default 4. */
  groupSize: z.number().int().min(2).max(26).default(4),
  /** Exchanges per conversation: 1 is single-turn CPO (G replies to one user line); more is multi-turn (G trajectories). Default 1. */
  maxTurns: z.number().int().min(1).max(8).default(1),
  /** Most tokens per reply. Default 40. */
  maxTokens: z.number().int().positive().default(40),
})
export type MainOptions = z.input<typeof mainOptionsSchema>

export interface Evaluation {
  step: number
  /** Mean rubric score of sampled conversations on the evaluation seeds, in [0, 1]: the judged reward. */
  rubric: number
  dimensions: Record<RubricDimension, number>
  /** Share of conversations where the character broke character (`inCharacter` 0). */
  breaksCharacter: number
  invalidRate: number
}

/** `report.json`: the options, every evaluation, the judge, and the judge's figures per step. */
export type Report = ExampleReport<Evaluation> & {
  judge: string
  judgeHistory: { step: number; agreement: number | undefined; failures: number; meanScore: number | undefined }[]
  models: { start: string; middle: string; end: string }
  tensorsLeftBeforeModelDispose: number
}

export async function main(options: MainOptions = {}): Promise<Report> {
  const parsed = parseArgument(mainOptionsSchema, options, 'options')
  const { log, seed } = parsed
  const run = await startExampleRun(new URL('..', import.meta.url), parsed)
  const remoteJudge = remoteJudgeFromEnvironment()
  log(`judge: ${remoteJudge === undefined ? 'rubric (no network)' : `${remoteJudge.id} at ${process.env.LUDIC_JUDGE_URL}`}`)

  // 1. A tokenizer trained on the dialogue, and a tiny model from scratch.
  const tokenizer = trainRoleplayTokenizer(parsed.vocabSize)
  const model = createModel('tiny', { vocabSize: tokenizer.vocabSize, seed })
  const userSimulator = createUserSimulator(seed)
  const evaluationSeeds = Array.from({ length: parsed.evaluationEpisodes }, (_, index) => (deriveSeed('ludic.roleplay-evaluation', seed) % 2 ** 30) + index)
  const evaluate = async (step: number): Promise<Evaluation> => evaluateRubric(model, tokenizer, { ...parsed, step, seeds: evaluationSeeds, userSimulator })
  const models = {
    start: join(run.runDirectory, 'models', 'start'),
    middle: join(run.runDirectory, 'models', 'middle'),
    end: join(run.runDirectory, 'models', 'end'),
  }

  // 2. Warm-up on the dialogue made from the cards; "before" is measured and the start model saved.
  const before = await run.beforeTraining(async () => {
    const warmUp = await run.warmUp({ model, tokenizer, examples: warmUpDialogue(seed).map(({ prompt, response }) => ({ prompt, response })), batchSize: 32 })
    log(`sft: ${parsed.sftSteps} steps, nll ${warmUp.nll?.toFixed(3) ?? 'n/a'}`)
    await saveModel(model, models.start)
    return evaluate(0)
  })
  log(`before CPO: rubric ${before.rubric.toFixed(3)}, breaks character ${pct(before.breaksCharacter)}`)

  // 3. CPO: G replies per context ranked by the judge, GRPO on the scores, PPO.
  const judge = createRoleplayGroupJudge({ judge: remoteJudge, seed })
  const trainer = createCpoTrainer({
    model,
    tokenizer,
    environments: [() => createRoleplayMix({ maxTurns: parsed.maxTurns })],
    prompt: roleplayPrompt,
    chatTemplate,
    rolePolicies: { user: userSimulator },
    scorer: judge,
    ...run.trainerConfig({ maxTokens: parsed.maxTokens, groupSize: parsed.groupSize, evaluate }),
  })
  const middleStep = Math.max(1, Math.floor(parsed.steps / 2))
  await trainer.run({
    steps: parsed.steps,
    progress: parsed.progress,
    onStep: async (metrics) => {
      if (metrics.step === middleStep) await saveModel(model, models.middle)
    },
  })
  await saveModel(model, models.end)
  const { evaluations, after } = await run.evaluations(before, trainer, evaluate)
  const judgeHistory = trainer.history.map((metrics: StepMetrics) => ({
    step: metrics.step,
    agreement: metrics['judge/agreement'],
    failures: metrics['judge/failures'] ?? 0,
    meanScore: metrics['judge/meanScore'],
  }))
  trainer.dispose()
  const tensorsLeft = tf.memory().numTensors
  model.dispose()

  // 4. The report: JSON and a chart of the judged reward and the judge's agreement.
  const agreement = judgeHistory.filter((entry) => entry.agreement !== undefined).map((entry) => ({ step: entry.step, value: entry.agreement! }))
  const report: Report = await run.writeReport(
    { options: parsed, before, after, evaluations, judge: judge.identity.model, judgeHistory, models, tensorsLeftBeforeModelDispose: tensorsLeft },
    {
      title: 'Role-play CPO: rubric score of sampled replies (held-out seeds) and judge agreement',
      series: [
        { name: 'rubric score (judged reward)', color: '#1f77b4', value: (evaluation) => evaluation.rubric, range: [0, 1] },
        { name: 'breaks character', color: '#d62728', value: (evaluation) => evaluation.breaksCharacter, range: [0, 1] },
        ...(agreement.length === 0 ? [] : [{ name: 'judge agreement (two shuffles)', color: '#7f7f7f', points: agreement, range: [0, 1] as [number, number] }]),
      ],
    },
  )
  log(
    `after ${trainer.stepCount} CPO steps: rubric ${after.rubric.toFixed(3)} (from ${before.rubric.toFixed(3)}), breaks character ${pct(after.breaksCharacter)} (from ${pct(before.breaksCharacter)})`,
  )
  log(`${report.seconds.toFixed(0)} s on ${run.backend}; report, metrics, chart and models (start, middle, end) in ${run.runDirectory}`)
  return report
}

/** Plays the evaluation seeds with the model (sampled, temperature 1) and the user simulator; the mean rubric figures. */
async function evaluateRubric(
  model: CausalLanguageModel,
  tokenizer: Tokenizer,
  settings: { step: number; seeds: number[]; seed: number; maxTurns: number; maxTokens: number; userSimulator: ReturnType<typeof createUserSimulator> },
): Promise<Evaluation> {
  const learner = createLocalPolicy({ model, tokenizer, chatTemplate, maxBatch: 256, seed: settings.seed, id: 'learner' })
  const result = await collect({
    environments: [() => createRoleplayMix({ maxTurns: settings.maxTurns })],
    policies: { character: learner, user: settings.userSimulator },
    seeds: settings.seeds,
    prompt: roleplayPrompt,
    maxTurns: 2 * settings.maxTurns + 1,
    concurrency: 256,
    maxBatchSize: 256,
    generation: { maxTokens: settings.maxTokens, temperature: 1 },
    samplingSeed: deriveSeed('ludic.roleplay-evaluation-sampling', settings.seed),
  })
  if (result.failures.length > 0) throw result.failures[0]!.error
  return summarise(settings.step, result.trajectories)
}

function summarise(step: number, trajectories: readonly Trajectory[]): Evaluation {
  const scored = trajectories.map((trajectory) => rubricScore(trajectory))
  const mean = (values: number[]) => values.reduce((total, value) => total + value, 0) / Math.max(values.length, 1)
  const dimensions = Object.fromEntries(
    (Object.keys(scored[0]?.dimensions ?? {}) as RubricDimension[]).map((name) => [name, mean(scored.map((entry) => entry.dimensions[name]))]),
  ) as Record<RubricDimension, number>
  const characterTurns = trajectories.flatMap((trajectory) => trajectory.turns.filter((turn) => turn.role === 'character'))
  return {
    step,
    rubric: mean(scored.map((entry) => entry.score)),
    dimensions,
    breaksCharacter: mean(scored.map((entry) => (entry.dimensions.inCharacter === 0 ? 1 : 0))),
    invalidRate: mean(characterTurns.map((turn) => (turn.invalidAction ? 1 : 0))),
  }
}

const pct = (value: number) => `${(100 * value).toFixed(1)}%`

runExampleMain(import.meta.url, main)
