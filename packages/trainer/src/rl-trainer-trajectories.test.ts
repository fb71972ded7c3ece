import { appendFile, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type AdvantageBatch, type AdvantageResult, type EnvironmentV1, InvalidArgumentError, type TrajectoryScorerV1 } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import { createGrpo } from '@ludic/advantages'
import { CausalLanguageModel, sequenceLogprobs } from '@ludic/model'
import { createPolicyLoss } from '@ludic/objectives'
import * as tf from '@tensorflow/tfjs-core'
import { createGroupJudge } from '@ludic/rewards'
import { describe, expect, it } from 'vitest'
import { createCpoTrainer } from './cpo-trainer.js'
import type { RlTrainerConfig } from './rl-config.js'
import { createRlTrainer } from './rl-trainer.js'
import { createChatEnvironment, createPickEnvironment, createTestModel, tokenizer, useBackendAndDirectory } from './test/support.js'
import { type TrajectoryRecord, trajectoryRecordSchema } from './trajectory-log.js'

const temporaryDirectory = useBackendAndDirectory('ludic-trajectories-')

const twoRoles = () => createPickEnvironment(['player0', 'player1'])
const baseConfig = (model: ReturnType<typeof createTestModel>, extra: Partial<RlTrainerConfig> = {}): RlTrainerConfig => ({
  model,
  tokenizer,
  environments: [twoRoles],
  optimizer: { learningRate: 3e-3 },
  batch: { episodesPerStep: 4, groupSize: 2, miniBatchSize: 4, ppoEpochs: 2, maxTokens: 2 },
  seed: 3,
  ...extra,
})

/** The file's records, each checked against the schema. */
async function records(runDirectory: string): Promise<TrajectoryRecord[]> {
  const text = await readFile(join(runDirectory, 'trajectories.jsonl'), 'utf8')
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => trajectoryRecordSchema.parse(JSON.parse(line)))
}

const snapshot = (model: ReturnType<typeof createTestModel>) => new Map([...model.parameters()].map(([name, variable]) => [name, variable.dataSync().slice()]))
/** Metrics without the wall-clock figures. */
const untimed = (metrics: Record<string, number>) => Object.fromEntries(Object.entries(metrics).filter(([name]) => !/Seconds$|^tokensPerSecond$/.test(name)))

describe('trajectories.jsonl of the RL trainer', () => {
  it('gives each written trained turn the entropy of the weights its update started from (temperature applied); none with entropy: false', async () => {
    const model = createTestModel(1)
    const start = new CausalLanguageModel(model.config, model.parameters())
    const runDirectory = join(temporaryDirectory(), 'entropy')
    const trainer = createRlTrainer(
      baseConfig(model, { runDirectory, batch: { ...baseConfig(model).batch, temperature: 0.7 }, trajectories: { episodesPerStep: 2 } }),
    )
    await trainer.step()
    const turns = (await records(runDirectory)).flatMap((record) => record.turns).filter((turn) => turn.trained)
    expect(turns.length).toBeGreaterThan(0)
    for (const turn of turns) {
      const promptIds = tokenizer.encode(turn.prompt!, { addSpecialTokens: false })
      const responseIds = Int32Array.from(turn.tokenIds!)
      const expected = tf.tidy(() =>
        Array.from(
          sequenceLogprobs(start, { promptIds: [promptIds], responseIds: [responseIds] }, { temperature: 0.7, withEntropy: true }).entropies!.dataSync(),
        ),
      )
      expect(turn.entropy).toHaveLength(responseIds.length)
      turn.entropy!.forEach((value, index) => expect(Math.abs(value! - expected[index]!)).toBeLessThan(1e-5))
    }
    trainer.dispose()
    start.dispose()
    const off = join(temporaryDirectory(), 'no-entropy')
    const plain = createRlTrainer(baseConfig(createTestModel(1), { runDirectory: off, trajectories: { episodesPerStep: 2, entropy: false } }))
    await plain.step()
    expect((await records(off)).flatMap((record) => record.turns).every((turn) => turn.entropy === undefined)).toBe(true)
    plain.dispose()
  })

  it('writes episodesPerStep lines a step: every turn with its prompt, tokens, rollout log-probs and the advantages the estimator gave', async () => {
    const model = createTestModel(1)
    const runDirectory = join(temporaryDirectory(), 'self-play')
    const grpo = createGrpo()
    const estimated: { batch: AdvantageBatch; result: AdvantageResult }[] = []
    const trainer = createRlTrainer(
      baseConfig(model, {
        runDirectory,
        advantage: {
          ...grpo,
          estimate: (batch) => {
            const result = grpo.estimate(batch)
            estimated.push({ batch, result })
            return result
          },
        },
        trajectories: { episodesPerStep: 3 },
      }),
    )
    await trainer.run({ steps: 2 })
    const written = await records(runDirectory)
    expect(written.map((record) => record.step)).toEqual([1, 1, 1, 2, 2, 2])
    for (const record of written) {
      expect(record.policyVersion).toBe(record.step - 1)
      expect(record.trainer).toBe('self-play')
      expect(record.episode.external).toBe(false)
      expect(record.episode.roles).toEqual(['player0', 'player1'])
      expect(record.render).toBe(record.turns.at(-1)!.observation)
      const { batch, result } = estimated[record.step - 1]!
      for (const turn of record.turns) {
        expect(turn.trained).toBe(true)
        const sample = batch.trajectoryIds!.findIndex((id, index) => id === record.episode.id && batch.turnIndices![index] === turn.index)
        expect(sample).toBeGreaterThanOrEqual(0)
        expect(turn.advantages).toEqual(Array.from(result.advantages[sample]!))
        const length = turn.tokenIds!.length
        expect(length).toBeGreaterThan(0)
        expect([turn.tokens!.length, turn.logprobs!.length, turn.advantages!.length]).toEqual([length, length, length])
        expect(turn.tokens!.join('')).toBe(tokenizer.decode(turn.tokenIds!))
        expect(turn.logprobs!.every((value) => value !== null && value < 0)).toBe(true)
        expect(turn.prompt).toContain(turn.observation)
      }
    }
    trainer.dispose()
    model.dispose()
  })

  it('draws the same episodes for the same seed; training is the same bit for bit with the log on, on for all, or off', async () => {
    const run = async (name: string, trajectories: RlTrainerConfig['trajectories']) => {
      const model = createTestModel(4)
      const runDirectory = join(temporaryDirectory(), name)
      const trainer = createRlTrainer(
        baseConfig(model, { runDirectory, trajectories, batch: { episodesPerStep: 6, groupSize: 1, miniBatchSize: 4, ppoEpochs: 2, maxTokens: 2 } }),
      )
      const metrics = await trainer.run({ steps: 3 })
      const weights = snapshot(model)
      trainer.dispose()
      model.dispose()
      const text = await readFile(join(runDirectory, 'trajectories.jsonl'), 'utf8').catch(() => undefined)
      return { metrics: metrics.map(untimed), weights, text }
    }
    const sampled = await run('sampled', { episodesPerStep: 2 })
    const again = await run('sampled-again', { episodesPerStep: 2 })
    const all = await run('all', { episodesPerStep: 'all' })
    const off = await run('off', { enabled: false })
    expect(again.text).toBe(sampled.text)
    expect(off.text).toBeUndefined()
    const allRecords = all
      .text!.trim()
      .split('\n')
      .map((line) => JSON.parse(line) as TrajectoryRecord)
    expect(allRecords).toHaveLength(18)
    const sampledRecords = sampled
      .text!.trim()
      .split('\n')
      .map((line) => JSON.parse(line) as TrajectoryRecord)
    expect(sampledRecords).toHaveLength(6)
    // A sample of the step's episodes, not always the first ones; each record as the same episode's in the full log.
    expect(sampledRecords.map((record) => record.episode.id.split('/').at(-1))).not.toEqual(['0', '1', '0', '1', '0', '1'])
    for (const record of sampledRecords) expect(allRecords.find((other) => other.episode.id === record.episode.id)).toEqual(record)
    for (const other of [all, off]) {
      expect(other.metrics).toEqual(sampled.metrics)
      for (const [name, values] of sampled.weights) expect(other.weights.get(name), name).toEqual(values)
    }
  })

  it('resumed from a checkpoint, never writes a step twice: the file is the uninterrupted run’s', async () => {
    const options = { checkpointEvery: 2, trajectories: { episodesPerStep: 2 } }
    const straightModel = createTestModel(5)
    const straightDirectory = join(temporaryDirectory(), 'straight')
    const straight = createRlTrainer(baseConfig(straightModel, { ...options, runDirectory: straightDirectory }))
    await straight.run({ steps: 4 })
    straight.dispose()
    straightModel.dispose()

    const resumedDirectory = join(temporaryDirectory(), 'resumed')
    const interruptedModel = createTestModel(5)
    const interrupted = createRlTrainer(baseConfig(interruptedModel, { ...options, runDirectory: resumedDirectory }))
    for (let step = 0; step < 3; step++) await interrupted.step() // checkpoint at 2; step 3 is lost in a crash…
    interrupted.dispose()
    interruptedModel.dispose()
    await appendFile(join(resumedDirectory, 'trajectories.jsonl'), '{"format":"ludic.trajectory.v1","step":4,"tur') // …mid-line
    const resumedModel = createTestModel(99)
    const resumed = createRlTrainer(baseConfig(resumedModel, { ...options, runDirectory: resumedDirectory, resume: true }))
    await resumed.run({ steps: 4 })
    resumed.dispose()
    resumedModel.dispose()
    const expected = await readFile(join(straightDirectory, 'trajectories.jsonl'), 'utf8')
    expect((await records(resumedDirectory)).map((record) => record.step)).toEqual([1, 1, 2, 2, 3, 3, 4, 4])
    expect(await readFile(join(resumedDirectory, 'trajectories.jsonl'), 'utf8')).toBe(expected)
  })

  it("a fresh run drops another run's lines of its steps, even with the log off", async () => {
    const runDirectory = join(temporaryDirectory(), 'stale')
    const model = createTestModel(2)
    const first = createRlTrainer(baseConfig(model, { runDirectory }))
    await first.run({ steps: 2 })
    first.dispose()
    expect((await records(runDirectory)).length).toBe(8)
    const second = createRlTrainer(baseConfig(model, { runDirectory, trajectories: { enabled: false } }))
    await second.step()
    second.dispose()
    model.dispose()
    expect(await readFile(join(runDirectory, 'trajectories.jsonl'), 'utf8')).toBe('')
  })

  it('keeps each line within maxLineBytes, naming what it cut', async () => {
    const wordy = (): EnvironmentV1 => {
      const environment = createPickEnvironment(['player0'])
      return {
        ...environment,
        reset: (seed) => {
          const view = environment.reset(seed)
          return { ...view, observation: `${'a long preamble. '.repeat(150)}${view.observation}` }
        },
      }
    }
    const model = createTestModel(2)
    const runDirectory = join(temporaryDirectory(), 'bounded')
    const trainer = createRlTrainer(
      // The model reads only the legal actions (a short prompt: a quick step); the record keeps the long observation.
      baseConfig(model, {
        runDirectory,
        environments: [wordy],
        prompt: '{legalActions}',
        batch: { maxTokens: 2, miniBatchSize: 4 },
        trajectories: { maxLineBytes: 4096 },
      }),
    )
    await trainer.step()
    trainer.dispose()
    model.dispose()
    const lines = (await readFile(join(runDirectory, 'trajectories.jsonl'), 'utf8')).trim().split('\n')
    expect(lines).toHaveLength(4)
    for (const line of lines) {
      expect(Buffer.byteLength(line)).toBeLessThanOrEqual(4096)
      const record = trajectoryRecordSchema.parse(JSON.parse(line))
      expect(record.truncatedFields).toEqual(['turns[0].observation', 'render'])
      expect(record.turns[0]!.observation.length).toBeGreaterThan(1000)
      expect(record.turns[0]!.tokenIds!.length).toBeGreaterThan(0)
    }
  })

  it('refuses bad trajectories options when the trainer is built, naming the option', () => {
    const model = createTestModel(2)
    const build = (trajectories: unknown) => () => createRlTrainer(baseConfig(model, { trajectories: trajectories as RlTrainerConfig['trajectories'] }))
    const refused = (trajectories: unknown, argument: string) => {
      expect(build(trajectories)).toThrow(InvalidArgumentError)
      expect(build(trajectories)).toThrow(argument)
    }
    refused({ maxLineBytes: 100 }, 'config.trajectories.maxLineBytes')
    refused({ maxLineBytes: 2 * 1024 * 1024 }, 'config.trajectories.maxLineBytes')
    refused({ episodesPerStep: 0 }, 'config.trajectories.episodesPerStep')
    refused({ episodesPerStep: 'some' }, 'config.trajectories.episodesPerStep')
    refused({ enabled: 'yes' }, 'config.trajectories.enabled')
    refused({ episodesPerSteps: 2 }, 'config.trajectories')
    model.dispose()
  })
})

describe('trajectories.jsonl of CPO and RL-PLUS', () => {
  const cpoConfig = (scorer: TrajectoryScorerV1, runDirectory: string) => ({
    model: createTestModel(11),
    tokenizer,
    environments: [createChatEnvironment],
    rolePolicies: { user: createScriptedPolicy({ id: 'user-simulator', replies: () => 'hello there' }) },
    scorer,
    optimizer: { learningRate: 1e-2 },
    batch: { episodesPerStep: 2, groupSize: 2, miniBatchSize: 16, ppoEpochs: 1, maxTokens: 4 },
    seed: 2,
    runDirectory,
    trajectories: { episodesPerStep: 'all' as const },
  })

  it("CPO: each episode carries its group's judgement (score, rank, the judge's raw answers, agreement); the user's turns their text", async () => {
    // A judge that always ranks the candidate shown first best: the second shuffle (the reverse) disagrees entirely.
    const judge = createGroupJudge({ judge: createScriptedPolicy({ id: 'judge', replies: () => 'Ranking: A > B' }), name: 'first-shown' })
    const runDirectory = join(temporaryDirectory(), 'cpo')
    const settings = cpoConfig(judge, runDirectory)
    const trainer = createCpoTrainer(settings)
    await trainer.step()
    trainer.dispose()
    settings.model.dispose()
    const written = await records(runDirectory)
    expect(written).toHaveLength(4)
    for (const record of written) {
      expect(record.trainer).toBe('cpo')
      expect(record.judgement).toEqual({
        scorer: 'first-shown',
        score: 0.5,
        rank: 1.5,
        groupEpisodeIds: written.filter((other) => other.episode.groupId === record.episode.groupId).map((other) => other.episode.id),
        groupScores: [0.5, 0.5],
        groupRanking: [1.5, 1.5],
        rawText: ['Ranking: A > B', 'Ranking: A > B'],
        agreement: 0,
      })
      expect(record.episode.returns.character).toBe(0.5)
      const [user, character] = record.turns
      expect(user).toMatchObject({ role: 'user', trained: false, response: 'hello there', policyId: 'user-simulator' })
      expect(user!.tokenIds).toBeUndefined()
      expect(character!.trained).toBe(true)
      expect(character!.advantages).toHaveLength(character!.tokenIds!.length)
    }
    // The trainer took the judgements it wrote: none is left over for the next step's records.
    expect(judge.takeJudgements()).toEqual([])
  })

  it('CPO with a scorer that gives no judgements: the score alone', async () => {
    const scorer: TrajectoryScorerV1 = { specificationVersion: 'v1', name: 'length', score: async (group) => group.map((_, index) => index) }
    const runDirectory = join(temporaryDirectory(), 'cpo-plain')
    const settings = cpoConfig(scorer, runDirectory)
    const trainer = createCpoTrainer(settings)
    await trainer.step()
    trainer.dispose()
    settings.model.dispose()
    const written = await records(runDirectory)
    expect(written.map((record) => record.judgement)).toEqual([0, 1, 0, 1].map((score) => ({ scorer: 'length', score, groupScores: [], rawText: [] })))
  })

  it("RL-PLUS: the demonstrations are marked external, with the step's π_old log-probs and no policy version", async () => {
    const model = createTestModel(6)
    const runDirectory = join(temporaryDirectory(), 'rl-plus')
    const trainer = createRlTrainer(
      baseConfig(model, {
        runDirectory,
        environments: [() => createPickEnvironment(['player0'])],
        advantage: createGrpo(),
        policyLoss: createPolicyLoss('rl-plus'),
        batch: { episodesPerStep: 2, groupSize: 2, miniBatchSize: 8, ppoEpochs: 1, maxTokens: 2 },
        externalDemonstrations: { demonstrations: () => [{ responses: ['a'] }] },
        trajectories: { episodesPerStep: 'all' },
      }),
    )
    await trainer.step()
    trainer.dispose()
    model.dispose()
    const written = await records(runDirectory)
    expect(written.map((record) => [record.trainer, record.episode.external])).toEqual([
      ['rl-plus', false],
      ['rl-plus', false],
      ['rl-plus', false],
      ['rl-plus', false],
      ['rl-plus', true],
      ['rl-plus', true],
    ])
    for (const record of written.filter((each) => each.episode.external)) {
      expect(record.policyVersion).toBeUndefined()
      const [turn] = record.turns
      expect(turn!.response).toBe('a')
      expect(turn!.tokenIds).toEqual([...tokenizer.encode('a', { addSpecialTokens: false }), tokenizer.eosTokenId])
      // Not the replay's placeholder 0s: the weights' own log-probs.
      expect(turn!.logprobs!.every((value) => value !== null && value < -0.5)).toBe(true)
      expect(turn!.advantages).toHaveLength(2)
    }
  })
})
