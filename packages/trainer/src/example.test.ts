import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { readLossMetrics } from '@ludic/objectives'
import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  exampleLeagueOptions,
  exampleOptionsSchema,
  leagueOpponents,
  leagueRatingsOf,
  opponentSharesAtMostOne,
  startExampleRun,
  writeLeagueRatingsChart,
} from './example.js'
import type { StepMetrics } from './metrics-log.js'

let directory: string
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ludic-example-run-'))
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

describe('exampleOptionsSchema', () => {
  it('has the documented defaults, takes an example’s own, and is extended with its own options', () => {
    const shared = exampleOptionsSchema().parse({})
    expect(shared).toMatchObject({
      steps: 100,
      sftSteps: 300,
      episodesPerStep: 128,
      learningRate: 5e-4,
      klCoefficient: 0.05,
      evaluateEvery: 10,
      seed: 0,
      temperature: 1,
      clipLow: 0.2,
      clipHigh: 0.2,
      progress: true,
    })
    expect(shared.runDirectory).toBeUndefined()
    const schema = exampleOptionsSchema({ steps: 40, klCoefficient: 0.2 }).extend({ turns: z.number().int().positive().default(6) })
    expect(schema.parse({ seed: 3 })).toMatchObject({ steps: 40, klCoefficient: 0.2, seed: 3, turns: 6, sftSteps: 300 })
    expect(() => schema.parse({ stpes: 1 })).toThrow(/stpes/) // strict: a misspelt option is an error
  })
})

describe('startExampleRun', () => {
  const optionsOf = (options: Record<string, unknown>) => exampleOptionsSchema().parse({ backend: 'cpu', ...options })

  it('names a fresh run runs/<timestamp> in the example folder, measures "before" once and writes the report', async () => {
    const lines: string[] = []
    const run = await startExampleRun(pathToFileURL(`${directory}/`), optionsOf({ log: (line: string) => lines.push(line) }))
    expect(run.runDirectory).toMatch(/[/\\]runs[/\\]\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d$/)
    expect(run.runDirectory.startsWith(directory)).toBe(true)
    expect(run.resuming).toBe(false)
    expect(lines).toEqual([`backend cpu; run ${run.runDirectory}`])
    const before = await run.beforeTraining(async () => ({ step: 0, winRate: 0.5 }))
    expect(before).toEqual({ step: 0, winRate: 0.5 })
    const report = await run.writeReport(
      { options: { steps: 3, log: () => {} }, before, after: before, evaluations: [before], target: 0.7 },
      { title: 'test', series: [{ name: 'win rate', color: '#000', points: [{ step: 0, value: 0.5 }] }] },
    )
    expect(report).toMatchObject({ backend: 'cpu', options: { steps: 3 }, after: before, target: 0.7, runDirectory: run.runDirectory })
    expect(report.options).not.toHaveProperty('log') // functions are left out
    expect(Object.keys(report)).toEqual(['backend', 'options', 'before', 'after', 'evaluations', 'target', 'seconds', 'runDirectory'])
    expect(JSON.parse(await readFile(join(run.runDirectory, 'report.json'), 'utf8'))).toEqual(report)
    expect(await readFile(join(run.runDirectory, 'chart.svg'), 'utf8')).toContain('win rate')
    expect((await readdir(run.runDirectory)).sort()).toEqual(['before.json', 'chart.svg', 'report.json'])
  })

  it('resumes a run directory holding a checkpoint: "before" is read back, not measured again', async () => {
    const runDirectory = join(directory, 'resumed')
    await mkdir(join(runDirectory, 'checkpoint-2'), { recursive: true })
    await writeFile(join(runDirectory, 'checkpoint-2', 'training-state.json'), '{}')
    await writeFile(join(runDirectory, 'before.json'), JSON.stringify({ step: 0, winRate: 0.25 }))
    const lines: string[] = []
    const run = await startExampleRun(directory, optionsOf({ runDirectory, log: (line: string) => lines.push(line) }))
    expect(run.resuming).toBe(true)
    expect(lines[0]).toMatch(/\(resuming\)$/)
    expect(await run.beforeTraining(() => Promise.reject(new Error('measured again')))).toEqual({ step: 0, winRate: 0.25 })
  })

  it('lists before, the logged evaluations and the last step’s, evaluating it only when it was not logged', async () => {
    const run = await startExampleRun(directory, optionsOf({ runDirectory: join(directory, 'evaluations'), log: () => {} }))
    const history: StepMetrics[] = [{ step: 1, 'eval/winRate': 0.5 }, { step: 2 }]
    const evaluated: number[] = []
    const evaluate = async (step: number) => {
      evaluated.push(step)
      return { step, winRate: 1 }
    }
    const { evaluations, after } = await run.evaluations({ step: 0, winRate: 0 }, { history, stepCount: 2 }, evaluate)
    expect(evaluations).toEqual([
      { step: 0, winRate: 0 },
      { step: 1, winRate: 0.5 },
      { step: 2, winRate: 1 },
    ])
    expect(after).toEqual({ step: 2, winRate: 1 })
    expect(evaluated).toEqual([2])
    const logged = await run.evaluations({ step: 0, winRate: 0 }, { history: history.slice(0, 1), stepCount: 1 }, evaluate)
    expect(logged.after).toEqual({ step: 1, winRate: 0.5 })
    expect(evaluated).toEqual([2])
  })

  it('turns the options into the trainer’s settings, the KL term only when β > 0', async () => {
    const options = optionsOf({ klCoefficient: 0, episodesPerStep: 8, runDirectory: join(directory, 'trainer'), log: () => {} })
    const run = await startExampleRun(directory, options)
    const config = run.trainerConfig({ maxTokens: 4, evaluate: async (step: number) => ({ step, random: { winRate: 1 } }) })
    expect(config).toMatchObject({
      optimizer: { learningRate: 5e-4 },
      batch: { episodesPerStep: 8, groupSize: 1, ppoEpochs: 2, miniBatchSize: 64, maxTokens: 4, temperature: 1, concurrency: 256, maxGenerationBatch: 256 },
      seed: 0,
      runDirectory: join(directory, 'trainer'),
      checkpointEvery: 10,
      resume: false,
      evaluateEvery: 10,
    })
    expect(config).not.toHaveProperty('kl')
    expect(await config.evaluate!({ step: 3 } as never)).toEqual({ 'random/winRate': 1 })
    // The games' sampling temperature is the trainer's (every log-prob of a step the tempered policy's).
    const tempered = await startExampleRun(directory, { ...options, temperature: 1.5 })
    expect(tempered.trainerConfig({ maxTokens: 4 }).batch).toMatchObject({ temperature: 1.5 })
    expect(() => exampleOptionsSchema().parse({ temperature: 0 })).toThrow(/temperature/)
    // PPO's clip: [1 − clipLow, 1 + clipHigh], 0.2 both ways by default; a ratio of 1.5 with a positive advantage is
    // clipped there and not with clipHigh 1 (clip-higher).
    const clippedHigh = async (config: ReturnType<typeof run.trainerConfig>) => {
      const inputs = {
        logprobs: tf.tensor2d([[Math.log(0.15)]]),
        oldLogprobs: tf.tensor2d([[Math.log(0.1)]]),
        advantages: tf.tensor2d([[1]]),
        mask: tf.tensor2d([[1]]),
      }
      const result = config.policyLoss!(inputs)
      const metrics = await readLossMetrics(result.metrics)
      tf.dispose([result.loss, result.clippedTokens.low, result.clippedTokens.high, ...Object.values(inputs)])
      return metrics.clippedHighTokens
    }
    expect(await clippedHigh(config)).toBe(1)
    const clipHigher = await startExampleRun(directory, { ...options, clipHigh: 1 })
    expect(await clippedHigh(clipHigher.trainerConfig({ maxTokens: 4 }))).toBe(0)
    expect(() => exampleOptionsSchema().parse({ clipHigh: -0.1 })).toThrow(/clipHigh/)
    expect(() => exampleOptionsSchema().parse({ clipLow: 1.5 })).toThrow(/clipLow/)
    const withKl = await startExampleRun(directory, { ...options, klCoefficient: 0.1 })
    expect(withKl.trainerConfig({ maxTokens: 4, groupSize: 2 })).toMatchObject({ kl: { coefficient: 0.1 }, batch: { groupSize: 2 } })
    expect(withKl.trainerConfig({ maxTokens: 4 }).kl).not.toHaveProperty('schedule')
    // klFinalRatio < 1: a cosine from β to klFinalRatio·β over the self-play steps.
    const annealed = await startExampleRun(directory, { ...options, klCoefficient: 0.1, klFinalRatio: 0, steps: 41 })
    expect(annealed.trainerConfig({ maxTokens: 4 }).kl).toEqual({
      coefficient: 0.1,
      estimator: 'low_var_kl',
      schedule: { type: 'warmup-cosine', totalSteps: 40, minRatio: 0 },
    })
    const moving = await startExampleRun(directory, { ...options, klCoefficient: 0.1, klReferenceEvery: 10, klReferenceMixup: 0.5 })
    expect(moving.trainerConfig({ maxTokens: 4 }).kl).toEqual({ coefficient: 0.1, estimator: 'low_var_kl', referenceSync: { every: 10, mixupAlpha: 0.5 } })
    // The estimator by name (the reverse KL's gradient with low_var_kl+); a name the trainer does not know is refused when parsed.
    const reverse = await startExampleRun(directory, { ...options, klCoefficient: 0.1, klEstimator: 'low_var_kl+' })
    expect(reverse.trainerConfig({ maxTokens: 4 }).kl).toEqual({ coefficient: 0.1, estimator: 'low_var_kl+' })
    expect(() => exampleOptionsSchema().parse({ ...options, klEstimator: 'k4' })).toThrow(/klEstimator/)
  })
})

describe('leagueRatingsOf', () => {
  it('reads the pool’s ratings from a step’s metrics, snapshots by step, and charts them', async () => {
    const metrics = {
      step: 12,
      'league/rating/snapshot-10': 1012.5,
      'league/rating/snapshot-0': 980,
      'league/rating/snapshot-5': 1001,
      'league/rating/snapshot-7': Number.NaN, // not a rating: skipped
      'league/rating/learner': 1030,
      'league/rating/random-opponent': 900,
      'league/rating/heuristic-opponent': 1077.4,
      'league/members': 3,
      'league/winRate/snapshot-0': 0.6,
    }
    const ratings = leagueRatingsOf(metrics)
    expect(ratings).toEqual({
      snapshots: [
        { step: 0, rating: 980 },
        { step: 5, rating: 1001 },
        { step: 10, rating: 1012.5 },
      ],
      learner: 1030,
      opponents: [
        { id: 'heuristic-opponent', rating: 1077.4 },
        { id: 'random-opponent', rating: 900 },
      ],
    })
    expect(leagueRatingsOf(undefined)).toEqual({ snapshots: [], learner: undefined, opponents: [] })
    const path = await writeLeagueRatingsChart(directory, ratings)
    expect(path).toBe(join(directory, 'league-ratings.svg'))
    const chart = await readFile(path, 'utf8')
    expect(chart).toMatch(/^<svg/)
    expect(chart).toContain('snapshot taken after step')
    expect(chart).toContain('the learner 1030')
    expect(chart).toContain('heuristic-opponent 1077')
  })
})

describe('exampleLeagueOptions', () => {
  const schema = exampleOptionsSchema()
    .extend({ ...exampleLeagueOptions, randomShare: z.number().min(0).max(1).default(0) })
    .superRefine(opponentSharesAtMostOne(['randomShare', 'leagueShare']))
  it('gives no league by default, the pool entry with a share, and the pool’s own defaults', () => {
    expect(leagueOpponents(schema.parse({}))).toEqual([])
    expect(leagueOpponents(schema.parse({ leagueShare: 0.3, leagueSampling: 'pfsp' }))).toEqual([
      { pool: 'snapshots', share: 0.3, every: 10, keep: 20, sampling: 'pfsp' },
    ])
  })
  it('refuses shares adding up to more than 1, naming the last one and the sum', () => {
    const result = schema.safeParse({ randomShare: 0.7, leagueShare: 0.5 })
    expect(result.success).toBe(false)
    expect(result.error?.issues[0]?.path).toEqual(['leagueShare'])
    expect(result.error?.issues[0]?.message).toContain('randomShare + leagueShare add up to 1.2')
    expect(schema.safeParse({ randomShare: 0.5, leagueShare: 0.5 }).success).toBe(true)
  })
})
