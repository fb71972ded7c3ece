import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError } from '@ludic/core'
import { kuhnAveragePolicy, kuhnExploitability, kuhnNashPolicy } from '@ludic/games'
import { latestCheckpoint, loadModel, loadTrainingCheckpoint, warmupCosineSchedule } from '@ludic/model'
import { afterAll, describe, expect, it } from 'vitest'
import { policyExamples } from './kuhn-setup.js'
import { parseCommandLineOptions } from '@ludic/report'
import { isEvaluation, main, mainOptionsSchema, type Reading, type Report, type RoundResult } from './main.js'

const directories: string[] = []
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

/** A run of a few seconds on WebAssembly: a short warm-up, 8 episodes a step, every step evaluated and checkpointed, a short distillation. */
const tinyRun = {
  sftSteps: 10,
  episodesPerStep: 8,
  miniBatchSize: 16,
  evaluateEvery: 1,
  evaluationEpisodes: 8,
  checkpointEvery: 1,
  distilSteps: 2,
  distilExamplesPerDecision: 3,
  backend: 'wasm',
  progress: false,
} as const

/** The metrics a run (or round) directory's trainer logged, a record per step. */
async function readMetrics(directory: string): Promise<Record<string, number>[]> {
  return (await readFile(join(directory, 'metrics.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, number>)
}

/** A round's evaluations from half its steps on, as its own average takes them (`averageFrom` 0.5). */
function shareOf(report: Report, round: RoundResult): Reading[] {
  const fromStep = round.fromStep + Math.round(0.5 * (round.toStep - round.fromStep))
  return report.evaluations.filter((evaluation) => evaluation.step >= fromStep && evaluation.step <= round.toStep)
}

/** `kuhnAveragePolicy` of the chosen evaluations, as the report gives an average (less `fromStep`). */
function averageOf(chosen: Reading[]) {
  const policy = kuhnAveragePolicy(chosen.map((evaluation) => evaluation.policy))
  return { evaluations: chosen.length, exploitability: kuhnExploitability(policy).exploitability, policy }
}

describe('selfplay-kuhn-poker', () => {
  it('runs with tiny settings and writes the report, the metrics and the chart', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-selfplay-kuhn-'))
    directories.push(runDirectory)
    const lines: string[] = []
    const report = await main({ ...tinyRun, steps: 2, runDirectory, log: (line) => lines.push(line) })
    expect(report.evaluations.map((evaluation) => evaluation.step)).toEqual([0, 1, 2])
    // The average of the policies evaluated from half the steps on (steps 1 and 2), exactly; then distilled into the model.
    const averaged = kuhnAveragePolicy(report.evaluations.slice(1).map((evaluation) => evaluation.policy))
    expect(report.average).toEqual({ fromStep: 1, evaluations: 2, exploitability: kuhnExploitability(averaged).exploitability, policy: averaged })
    expect(report.distilled?.step).toBe(2)
    expect(report.distilled?.policy).not.toEqual(report.after.policy)
    expect(lines).toContainEqual(expect.stringMatching(/^average of the 2 policies evaluated from step 1: exploitability [\d.]+$/))
    expect(lines).toContainEqual(expect.stringMatching(/^distilled the average into the model \(2 updates, \d+ s\): exploitability [\d.]+$/))
    for (const evaluation of report.evaluations) {
      expect(evaluation.exploitability).toBeGreaterThanOrEqual(0)
      expect(evaluation.exploitability).toBeLessThanOrEqual(1.5)
      if (!isEvaluation(evaluation)) throw new Error(`step ${evaluation.step} is only a reading: every step is evaluated here`)
      expect(evaluation.winRate).toBeGreaterThanOrEqual(0)
      expect(evaluation.winRate).toBeLessThanOrEqual(1)
    }
    const saved = JSON.parse(await readFile(join(runDirectory, 'report.json'), 'utf8')) as { after: { step: number }; backend: string }
    expect(saved.after.step).toBe(2)
    expect(saved.backend).toBe('wasm')
    const metrics = await readMetrics(runDirectory)
    expect(metrics.map((record) => record.step)).toEqual([1, 2])
    expect(metrics[0]!['eval/exploitability']).toBeTypeOf('number')
    const chart = await readFile(join(runDirectory, 'chart.svg'), 'utf8')
    expect(chart).toMatch(/^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/)
    expect(chart).toContain('exploitability')
    expect(lines.at(-2)).toMatch(/exploitability [\d.]+ \(from [\d.]+/)
    // Beside its win rate against random play, what Nash play wins there (exactly): less than a best response.
    expect(lines.at(-2)).toContain('Nash play wins 45.8%–50.0%, a best response to random 68.8%)')
    expect(report.againstRandom.nash[0]).toEqual({ meanReward: expect.closeTo(1 / 9, 12), winRate: expect.closeTo(11 / 24, 12) })
    expect(chart).toContain('Nash play 45.8%')
  })

  it('with averageEvery, reads the policy between evaluations and averages the readings too; refused unless it divides evaluateEvery', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-selfplay-kuhn-readings-'))
    const everyStep = await mkdtemp(join(tmpdir(), 'ludic-selfplay-kuhn-readings-'))
    directories.push(runDirectory, everyStep)
    const options = { ...tinyRun, distilSteps: 0, steps: 5, evaluateEvery: 4, averageEvery: 1, log: () => {} }
    const report = await main({ ...options, runDirectory })
    // Steps 1–3 read, 4 evaluated, and the last step (5: a reading by the schedule) evaluated in full.
    expect(report.evaluations.map((evaluation) => [evaluation.step, isEvaluation(evaluation)])).toEqual([
      [0, true],
      [1, false],
      [2, false],
      [3, false],
      [4, true],
      [5, true],
    ])
    expect(report.after).toEqual(report.evaluations.at(-1))
    const metrics = await readMetrics(runDirectory)
    expect(metrics.map((record) => [record.step, typeof record['eval/exploitability'], typeof record['eval/winRate']])).toEqual([
      [1, 'number', 'undefined'],
      [2, 'number', 'undefined'],
      [3, 'number', 'undefined'],
      [4, 'number', 'number'],
      [5, 'number', 'undefined'],
    ])
    // The readings are the policy the run had at their steps (the same run evaluated at every step: the readings and
    // evaluations change nothing in training), and the average (from step 3) takes them with the evaluations.
    const full = await main({ ...options, averageEvery: undefined, evaluateEvery: 1, runDirectory: everyStep })
    expect(report.evaluations.map(({ step, exploitability, policy }) => ({ step, exploitability, policy }))).toEqual(
      full.evaluations.map(({ step, exploitability, policy }) => ({ step, exploitability, policy })),
    )
    expect(report.average).toEqual({ fromStep: 3, ...averageOf(report.evaluations.slice(3)) })
    expect(report.average.evaluations).toBe(3)
    for (const [changed, value] of [
      [{ averageEvery: 3 }, 3],
      [{ averageEvery: 8 }, 8],
    ] as const) {
      const refused = await main({ ...options, ...changed }).catch((error: unknown) => error)
      expect(InvalidArgumentError.isInstance(refused) && [refused.argument, refused.value]).toEqual(['options.averageEvery', value])
    }
  })

  it('keeps one RAE baseline per information state with --rae-per-state (as the checkpoint saves them); refused with another estimator', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-selfplay-kuhn-'))
    directories.push(runDirectory)
    const quick = { steps: 1, sftSteps: 10, episodesPerStep: 16, miniBatchSize: 16, evaluateEvery: 1, evaluationEpisodes: 4, checkpointEvery: 1 }
    const report = await main({ ...quick, raePerState: true, runDirectory, backend: 'wasm', progress: false, log: () => {} })
    expect(report.options).toMatchObject({ raePerState: true, advantage: 'rae' })
    const state = JSON.parse(await readFile(join(runDirectory, 'checkpoint-1', 'training-state.json'), 'utf8')) as {
      extra: { estimatorState: { baselines: { role: string; state?: string }[] } }
    }
    const { baselines } = state.extra.estimatorState
    // One per seat met, and one per information state met: the seat, its chips, its card and the bets so far.
    const states = baselines.filter((baseline) => baseline.state !== undefined)
    const seats = baselines.filter((baseline) => baseline.state === undefined).map((baseline) => baseline.role)
    expect(seats.length).toBeGreaterThan(0)
    expect(states.every((baseline) => /^player[01]\|round \d+\|chips [+-]?\d+\|card [JQK]\|history (-|p|b|pb)$/.test(baseline.state ?? ''))).toBe(true)
    expect(states.every((baseline) => seats.includes(baseline.role))).toBe(true)
    expect(states.length).toBeGreaterThan(2)
    const refused = await main({ raePerState: true, advantage: 'rloo', groupSize: 2, backend: 'wasm', progress: false, log: () => {} }).catch(
      (error: unknown) => error,
    )
    expect(InvalidArgumentError.isInstance(refused) && refused.argument).toBe('options.raePerState')
  })
})

describe('selfplay-kuhn-poker in rounds (--rounds)', () => {
  it("starts each round from the last one's distilled average, with a KL to it, and averages each round on its own", async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-selfplay-kuhn-rounds-'))
    directories.push(runDirectory)
    const lines: string[] = []
    const report = await main({
      ...tinyRun,
      evaluateEvery: 2,
      averageEvery: 1,
      steps: 2,
      rounds: 3,
      roundSteps: 3,
      roundKlCoefficient: 0.3,
      roundLearningRate: 1e-4,
      roundWarmupSteps: 1,
      roundEpisodesPerStep: 4,
      roundMiniBatchSize: 3,
      runDirectory,
      log: (line) => lines.push(line),
    })
    // Each round's steps counted from its start: every second evaluated, the others read, its last evaluated in full.
    expect(report.evaluations.map((evaluation) => [evaluation.step, isEvaluation(evaluation)])).toEqual(
      [true, false, true, false, true, true, false, true, true].map((evaluated, step) => [step, evaluated]),
    )
    const rounds = report.rounds!
    expect(rounds.map(({ round, fromStep, toStep }) => [round, fromStep, toStep])).toEqual([
      [1, 0, 2],
      [2, 2, 5],
      [3, 5, 8],
    ])
    // Each round's average: its own evaluations and readings from half its steps on (round 2: steps 4 and 5 of 3–5; round 1: 1, read, and 2).
    for (const round of rounds) {
      const fromStep = round.fromStep + Math.round(0.5 * (round.toStep - round.fromStep))
      const chosen = report.evaluations.filter((evaluation) => evaluation.step >= fromStep && evaluation.step <= round.toStep)
      const policy = kuhnAveragePolicy(chosen.map((evaluation) => evaluation.policy))
      expect(round.average).toEqual({ fromStep, evaluations: chosen.length, exploitability: kuhnExploitability(policy).exploitability, policy })
      expect(round.distilled?.step).toBe(round.toStep)
    }
    expect(report.average).toEqual(rounds[2]!.average)
    expect(report.distilled).toEqual(rounds[2]!.distilled)
    expect(report.after.step).toBe(8)
    expect(lines).toContainEqual(expect.stringMatching(/^round 2: average of the 2 policies evaluated from step 4: exploitability [\d.]+$/))
    // Round 2's KL reference, and its first policy, are round 1's distilled average; its trainer has the round's options.
    // (Each loaded into a model of other weights first — round 3's final one — so that a load that did nothing fails.)
    const distilled = await loadModel(join(runDirectory, 'distilled'))
    const reference = await loadModel(join(runDirectory, 'round-3', 'distilled')).catch(() => loadModel(join(runDirectory, 'round-2', 'distilled')))
    const roundOne = await loadModel(join(runDirectory, 'round-2', 'distilled'))
    try {
      const name = 'model.layers.0.mlp.down_proj.weight'
      expect(reference.parameter(name).dataSync()).not.toEqual(distilled.parameter(name).dataSync())
      await loadTrainingCheckpoint((await latestCheckpoint(join(runDirectory, 'round-2', 'reference')))!, { parameters: reference.parameters() })
      await loadTrainingCheckpoint(join(runDirectory, 'checkpoint-2'), { parameters: roundOne.parameters() })
      for (const [name, weight] of distilled.parameters()) {
        expect(reference.parameter(name).dataSync()).toEqual(weight.dataSync())
      }
      expect(roundOne.parameter(name).dataSync()).not.toEqual(distilled.parameter(name).dataSync())
    } finally {
      for (const model of [distilled, reference, roundOne]) model.dispose()
    }
    const roundTwo = await readMetrics(join(runDirectory, 'round-2'))
    // Its learning rate: a warm-up of 1 step, then a cosine to a tenth over the round (the trainer's schedule, by hand).
    const schedule = warmupCosineSchedule({ warmupSteps: 1, totalSteps: 2, minRatio: 0.1 })
    expect(schedule(0)).toBeLessThan(1)
    expect(roundTwo.map((record) => [record.step, record.klCoefficient, record.learning_rate])).toEqual(
      [1, 2, 3].map((step) => [step, 0.3, expect.closeTo(1e-4 * schedule(step - 1), 12)]),
    )
    // The later rounds' batches: 4 episodes a step in mini-batches of 3 samples, where round 1 played 8 in mini-batches
    // of 16 (each round's optimizer, fresh with it, took two epochs of its mini-batches a step).
    const roundOneMetrics = await readMetrics(runDirectory)
    expect(roundOneMetrics.map((record) => record.episodes)).toEqual([8, 8])
    expect(roundTwo.map((record) => record.episodes)).toEqual([4, 4, 4])
    const optimizerSteps = async (checkpoint: string) =>
      (JSON.parse(await readFile(join(checkpoint, 'training-state.json'), 'utf8')) as { optimizer: { step: number } }).optimizer.step
    const updatesOf = (records: Record<string, number>[], miniBatchSize: number) =>
      records.reduce((sum, record) => sum + 2 * Math.ceil(record.samples! / miniBatchSize), 0)
    expect(await optimizerSteps(join(runDirectory, 'checkpoint-2'))).toBe(updatesOf(roundOneMetrics, 16))
    expect(await optimizerSteps(join(runDirectory, 'round-2', 'checkpoint-3'))).toBe(updatesOf(roundTwo, 3))
  })

  it("with roundAverage 'running', distils the average of every round after the first, each from half its steps on", async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-selfplay-kuhn-running-'))
    directories.push(runDirectory)
    const lines: string[] = []
    // Rounds evaluated at their third step (and last), read at the others: each share (from its second step) holds a reading.
    const report = await main({
      ...tinyRun,
      evaluateEvery: 3,
      averageEvery: 1,
      steps: 2,
      rounds: 4,
      roundSteps: 3,
      roundAverage: 'running',
      runDirectory,
      log: (line) => lines.push(line),
    })
    const rounds = report.rounds!
    const share = (round: RoundResult) => shareOf(report, round)
    for (const round of rounds.slice(1)) expect(share(round).map(isEvaluation)).toEqual([false, true])
    // Round 1 distils its own average; round k > 1 the average over rounds 2…k, its own kept beside it.
    expect(rounds[0]!.average).toMatchObject(averageOf(share(rounds[0]!)))
    expect(rounds[0]!.own).toBeUndefined()
    for (const k of [2, 3, 4]) {
      const round = rounds[k - 1]!
      const included = rounds.slice(1, k)
      expect(round.average).toEqual({
        fromStep: share(rounds[1]!)[0]!.step,
        rounds: included.map((entry) => entry.round),
        ...averageOf(included.flatMap(share)),
      })
      expect(round.own).toMatchObject(averageOf(share(round)))
      expect(lines).toContainEqual(
        expect.stringMatching(
          new RegExp(`^round ${k}: running average of rounds ${included.map((entry) => entry.round).join(', ')} \\(\\d+ policies\\): exploitability [\\d.]+$`),
        ),
      )
    }
    expect(rounds[3]!.average.policy).not.toEqual(rounds[3]!.own!.policy)
    expect(report.average).toEqual(rounds[3]!.average)
    // Round 4's reference is round 3's distilled running average.
    const distilled = await loadModel(join(runDirectory, 'round-3', 'distilled'))
    const reference = await loadModel(join(runDirectory, 'round-2', 'distilled'))
    try {
      await loadTrainingCheckpoint((await latestCheckpoint(join(runDirectory, 'round-4', 'reference')))!, { parameters: reference.parameters() })
      for (const [name, weight] of distilled.parameters()) expect(reference.parameter(name).dataSync()).toEqual(weight.dataSync())
    } finally {
      distilled.dispose()
      reference.dispose()
    }
  })

  it("with roundAverage 'running-last', distils each round's own average but the last round's running one", async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-selfplay-kuhn-running-last-'))
    directories.push(runDirectory)
    const report = await main({ ...tinyRun, steps: 2, rounds: 4, roundSteps: 3, roundAverage: 'running-last', runDirectory, log: () => {} })
    const rounds = report.rounds!
    const share = (round: RoundResult) => shareOf(report, round)
    // Rounds 1–3 as with 'own' (each its own average: round 3's is not the running one of rounds 2 and 3); round 4 the running one.
    for (const round of rounds.slice(0, 3)) {
      expect(round.own).toBeUndefined()
      expect(round.average).toEqual({ fromStep: share(round)[0]!.step, ...averageOf(share(round)) })
    }
    expect(rounds[2]!.average.policy).not.toEqual(averageOf([...share(rounds[1]!), ...share(rounds[2]!)]).policy)
    expect(rounds[3]!.own).toEqual({ fromStep: share(rounds[3]!)[0]!.step, ...averageOf(share(rounds[3]!)) })
    const included = rounds.slice(1)
    expect(rounds[3]!.average).toEqual({ fromStep: share(rounds[1]!)[0]!.step, rounds: [2, 3, 4], ...averageOf(included.flatMap(share)) })
    expect(report.average).toEqual(rounds[3]!.average)
    expect(report.distilled).toEqual(rounds[3]!.distilled)
  })

  it('refuses rounds without a distillation, a KL, with asynchronous workers or a moving reference, and round options without rounds, naming the option', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-selfplay-kuhn-rounds-refused-'))
    directories.push(runDirectory)
    const quick = { steps: 1, sftSteps: 1, episodesPerStep: 2, evaluationEpisodes: 2, runDirectory, backend: 'wasm', progress: false, log: () => {} } as const
    for (const [options, argument] of [
      [{ rounds: 2 }, 'options.rounds'],
      [{ rounds: 2, distilSteps: 2, klCoefficient: 0 }, 'options.rounds'],
      [{ rounds: 2, distilSteps: 2, asyncWorkers: 1 }, 'options.rounds'],
      [{ rounds: 2, distilSteps: 2, klReferenceEvery: 5 }, 'options.klReferenceEvery'],
      [{ roundSteps: 3 }, 'options.roundSteps'],
      [{ roundKlCoefficient: 0.1 }, 'options.roundKlCoefficient'],
      [{ roundLearningRate: 1e-4 }, 'options.roundLearningRate'],
      [{ roundWarmupSteps: 5 }, 'options.roundWarmupSteps'],
      [{ roundEpisodesPerStep: 256 }, 'options.roundEpisodesPerStep'],
      [{ roundMiniBatchSize: 128 }, 'options.roundMiniBatchSize'],
      [{ roundReferenceFloor: 0.05 }, 'options.roundReferenceFloor'],
      [{ roundAverage: 'running' }, 'options.roundAverage'],
      [{ roundAverage: 'running-last' }, 'options.roundAverage'],
    ] as const) {
      const refused = await main({ ...quick, ...options }).catch((error: unknown) => error)
      expect(InvalidArgumentError.isInstance(refused) && refused.argument, JSON.stringify(options)).toBe(argument)
    }
  })

  it('refuses to resume a run of rounds with other round settings or fewer rounds, naming the option', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-selfplay-kuhn-rounds-settings-'))
    directories.push(runDirectory)
    const options = {
      steps: 1,
      sftSteps: 2,
      episodesPerStep: 4,
      miniBatchSize: 8,
      evaluateEvery: 1,
      evaluationEpisodes: 2,
      checkpointEvery: 1,
      rounds: 2,
      roundSteps: 1,
      distilSteps: 1,
      distilExamplesPerDecision: 2,
      runDirectory,
      backend: 'wasm',
      progress: false,
      log: () => {},
    } as const
    await main(options)
    for (const [changed, argument] of [
      [{ roundSteps: 2 }, 'options.roundSteps'],
      [{ rounds: 1, roundSteps: undefined }, 'options.rounds'],
      [{ averageFrom: 0.3 }, 'options.averageFrom'],
      [{ raePerState: true }, 'options.raePerState'],
      [{ roundAverage: 'running' }, 'options.roundAverage'],
      [{ roundWarmupSteps: 2 }, 'options.roundWarmupSteps'],
      [{ roundEpisodesPerStep: 8 }, 'options.roundEpisodesPerStep'],
      [{ roundMiniBatchSize: 4 }, 'options.roundMiniBatchSize'],
      [{ roundReferenceFloor: 0.05 }, 'options.roundReferenceFloor'],
      [{ evaluateEvery: 2, averageEvery: 1 }, 'options.averageEvery'],
    ] as const) {
      const refused = await main({ ...options, ...changed }).catch((error: unknown) => error)
      expect(InvalidArgumentError.isInstance(refused) && refused.argument, JSON.stringify(changed)).toBe(argument)
    }
    // rounds.json keeps the later rounds' values in force: the option whose default they follow, changed, is refused
    // under the later rounds' name; the defaults given explicitly are the same run.
    expect(JSON.parse(await readFile(join(runDirectory, 'rounds.json'), 'utf8'))).toMatchObject({
      roundSteps: 1,
      roundKlCoefficient: 0.2,
      roundLearningRate: 5e-4,
      roundWarmupSteps: 0,
      roundEpisodesPerStep: 4,
      roundMiniBatchSize: 8,
    })
    for (const [changed, argument] of [
      [{ episodesPerStep: 8 }, 'options.roundEpisodesPerStep'],
      [{ miniBatchSize: 4 }, 'options.roundMiniBatchSize'],
      [{ klCoefficient: 0.3 }, 'options.roundKlCoefficient'],
      [{ learningRate: 1e-3 }, 'options.roundLearningRate'],
    ] as const) {
      const refused = await main({ ...options, ...changed }).catch((error: unknown) => error)
      expect(InvalidArgumentError.isInstance(refused) && refused.argument, JSON.stringify(changed)).toBe(argument)
      expect((refused as Error).message).toContain('the value in force')
    }
    const explicit = await main({
      ...options,
      roundKlCoefficient: 0.2,
      roundLearningRate: 5e-4,
      roundWarmupSteps: 0,
      roundEpisodesPerStep: 4,
      roundMiniBatchSize: 8,
    })
    expect(explicit.rounds?.map(({ fromStep, toStep }) => [fromStep, toStep])).toEqual([
      [0, 1],
      [1, 2],
    ])
    // A run from before roundAverage, averageEvery, roundWarmupSteps, the later rounds' batch sizes and the reference's
    // floor were recorded: it averaged each round on its own evaluations (a running average, or readings between them,
    // refused), played every round's steps alike (other later batches refused), distilled the averages as they were (a
    // floor refused), and its warm-up steps are unknown (not checked).
    const file = join(runDirectory, 'rounds.json')
    const {
      roundAverage: _,
      roundWarmupSteps: __,
      averageEvery: ___,
      roundEpisodesPerStep: ____,
      roundMiniBatchSize: _____,
      roundReferenceFloor: ______,
      ...older
    } = JSON.parse(await readFile(file, 'utf8'))
    // And one from before the values in force were kept: null for "not given" (giving the option refused).
    await writeFile(file, JSON.stringify({ ...older, roundKlCoefficient: null }))
    const notGiven = await main({ ...options, rounds: 3, roundKlCoefficient: 0.2 }).catch((error: unknown) => error)
    expect((notGiven as Error).message).toContain('started with roundKlCoefficient not given: resume it with the same')
    for (const [changed, argument] of [
      [{ roundAverage: 'running' }, 'options.roundAverage'],
      [{ evaluateEvery: 2, averageEvery: 1 }, 'options.averageEvery'],
      [{ roundEpisodesPerStep: 8 }, 'options.roundEpisodesPerStep'],
      [{ roundMiniBatchSize: 4 }, 'options.roundMiniBatchSize'],
      [{ roundReferenceFloor: 0.05 }, 'options.roundReferenceFloor'],
      [{ roundKlCoefficient: 0.2 }, 'options.roundKlCoefficient'],
    ] as const) {
      const refused = await main({ ...options, rounds: 3, ...changed }).catch((error: unknown) => error)
      expect(InvalidArgumentError.isInstance(refused) && refused.argument, JSON.stringify(changed)).toBe(argument)
    }
    // More rounds continue the run: its first two rounds are kept, a third is added (averageEvery equal to
    // evaluateEvery reads nothing between evaluations: the default's).
    const longer = await main({ ...options, rounds: 3, roundWarmupSteps: 1, averageEvery: 1 })
    expect(longer.rounds?.map(({ fromStep, toStep }) => [fromStep, toStep])).toEqual([
      [0, 1],
      [1, 2],
      [2, 3],
    ])
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ rounds: 3, roundWarmupSteps: 1, roundAverage: 'own', averageEvery: null })
  })
})

describe('selfplay-kuhn-poker near-nash script', () => {
  it("runs the README's round recipe: options the schema accepts, six rounds of 256 episodes a step, ending on the running average", async () => {
    const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }
    const [command, ...argv] = manifest.scripts['near-nash']!.split(' ')
    expect([command, argv[0]]).toEqual(['tsx', 'src/main.ts'])
    const options = mainOptionsSchema.parse(parseCommandLineOptions(argv.slice(1)))
    expect(options).toMatchObject({
      steps: 200,
      episodesPerStep: 256,
      miniBatchSize: 128,
      rounds: 6,
      roundSteps: 100,
      roundAverage: 'running-last',
      distilSteps: 300,
      averageEvery: 1,
    })
    // Every round plays the first round's batch (the later rounds' options not given: theirs by default).
    expect([options.roundEpisodesPerStep, options.roundMiniBatchSize]).toEqual([undefined, undefined])
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
    expect(readme).toContain(`# = npx ${manifest.scripts['near-nash']}`)
  })
})

describe('selfplay-kuhn-poker policy examples', () => {
  it("give each decision's moves in the policy's proportions", () => {
    const examples = policyExamples(kuhnNashPolicy(0.2), 10)
    expect(examples).toHaveLength(120)
    // The first actor's K ("2", listed third): bet 3α = 0.6 of the time.
    const kingOpening = examples.slice(20, 30)
    expect(new Set(kingOpening.map((example) => example.prompt)).size).toBe(1)
    expect(kingOpening.map((example) => example.response)).toEqual([...new Array(6).fill('[bet]'), ...new Array(4).fill('[check]')])
    // Facing a bet with a Q after checking ("1pb"): call 1/3 + α ≈ 0.53 → 5 of 10.
    expect(examples.slice(40, 50).filter((example) => example.response === '[call]')).toHaveLength(5)
  })
})

describe('selfplay-kuhn-poker with asynchronous collection', () => {
  it('trains with a rollout worker thread playing while the main thread updates', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-selfplay-kuhn-async-'))
    directories.push(runDirectory)
    const report = await main({
      steps: 3,
      sftSteps: 10,
      episodesPerStep: 8,
      miniBatchSize: 16,
      evaluateEvery: 3,
      averageEvery: 1,
      evaluationEpisodes: 8,
      checkpointEvery: 0,
      asyncWorkers: 1,
      runDirectory,
      backend: 'wasm',
      progress: false,
      log: () => {},
    })
    expect(report.after.step).toBe(3)
    const metrics = await readMetrics(runDirectory)
    expect(metrics.map((record) => record.step)).toEqual([1, 2, 3])
    expect(metrics.map((record) => record.staleness)).toEqual([0, 1, 1])
    // The policy read at steps 1 and 2, evaluated (a match played) at 3.
    expect(metrics.map((record) => [typeof record['eval/exploitability'], typeof record['eval/winRate']])).toEqual([
      ['number', 'undefined'],
      ['number', 'undefined'],
      ['number', 'number'],
    ])
    for (const record of metrics) {
      expect(record.importanceWeightMean).toBeGreaterThan(0)
      expect(record.importanceWeightMean).toBeLessThanOrEqual(2)
      expect(record.episodes).toBe(8)
    }
  })
})
