import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createRandom, type EnvironmentV1 } from '@ludic/core'
import { createBlocksworld } from '@ludic/games'
import * as tf from '@tensorflow/tfjs-core'
import { describe, expect, it } from 'vitest'
import { actionLogprobs } from './action-logprobs.js'
import { createFlowOfReasoningTrainer, sampleStepwiseTrajectories, stepwiseForwardLogprobs } from './flow-of-reasoning-trainer.js'
import { createStepwiseEnvironments } from './stepwise-environments.js'
import { planEnvironment, plainChatTemplate } from './test/plan-environment.js'
import { createTestModel, tokenizer, useBackendAndDirectory } from './test/support.js'
import { trajectoryRecordSchema } from './trajectory-log.js'
import { expectResumeBitForBit } from './test/resume.js'

const directory = useBackendAndDirectory('ludic-flow-of-reasoning-')

/**
 * Two steps, three actions each: nine complete trajectories with known rewards (seed 0 deals problem `q`, seed 1
 * `r`; the prompt is `q:ab>`). `aa`, R = 8, is the one that counts as solved.
 */
const rewards: Record<string, number> = { aa: 8, ab: 1, ac: 1, ba: 1, bb: 1, bc: 1, ca: 1, cb: 1, cc: 4 }
const total = Object.values(rewards).reduce((sum, value) => sum + value, 0)
const twoSteps = planEnvironment({ length: 2, reward: (plan) => rewards[plan]! })
/** The trainer's task fields: the environment, its seeds, the prompt as it is, and `aa` solved. */
const twoStepTask = { environments: [twoSteps], prompt: '{observation}', chatTemplate: plainChatTemplate, solved: 8 }

/** The model's exact terminal distribution: P(x) P(y|x), each normalised over the three actions. */
async function terminalDistribution(model: ReturnType<typeof createTestModel>): Promise<Map<string, number>> {
  const prompts = ['', 'a', 'b', 'c'].map((prefix) => ({ prompt: `q:${prefix}>`, actions: ['a', 'b', 'c'] }))
  const scores = await actionLogprobs(model, tokenizer, prompts)
  const normalised = scores.map((row) => {
    const weights = row.map(Math.exp)
    const sum = weights.reduce((a, b) => a + b, 0)
    return weights.map((weight) => weight / sum)
  })
  const distribution = new Map<string, number>()
  ;['a', 'b', 'c'].forEach((first, i) => ['a', 'b', 'c'].forEach((second, j) => distribution.set(first + second, normalised[0]![i]! * normalised[i + 1]![j]!)))
  return distribution
}

const totalVariation = (distribution: Map<string, number>) =>
  0.5 * Object.entries(rewards).reduce((sum, [plan, reward]) => sum + Math.abs(distribution.get(plan)! - reward / total), 0)

describe('createFlowOfReasoningTrainer', () => {
  it('moves the terminal distribution toward R/ΣR and log Z toward log ΣR, with replay, ε, tempering and local search on', async () => {
    const model = createTestModel(3)
    const before = totalVariation(await terminalDistribution(model))
    const trainer = createFlowOfReasoningTrainer({
      model,
      tokenizer,
      ...twoStepTask,
      seeds: [0],
      steps: 250,
      samplesPerProblem: 4,
      rewardExponent: { start: 1, end: 1 },
      logPartition: { initial: 0, learningRateMultiplier: 10 },
      optimizer: { learningRate: 3e-3 },
      localSearch: { tries: 4 },
      seed: 1,
      runDirectory: directory(),
    })
    await trainer.step() // the optimizer's and the table's tensors exist from the start: the count stays put
    const tensors = tf.memory().numTensors
    const history = await trainer.run()
    expect(tf.memory().numTensors).toBe(tensors)
    expect(trainer.stepCount).toBe(250)
    const after = totalVariation(await terminalDistribution(model))
    expect(before).toBeGreaterThan(0.3)
    expect(after).toBeLessThan(before / 2)
    const { keys, values } = trainer.logPartitionState()
    expect(keys).toEqual(['plan-v0/0'])
    expect(Math.abs(values[0]! - Math.log(total))).toBeLessThan(0.5)
    // Each exploration piece ran: replayed batches, sampled batches, local-search accepts, the schedules.
    expect(history.some((metrics) => metrics.replayShare === 1)).toBe(true)
    expect(history.some((metrics) => metrics.freshSamples === 4)).toBe(true)
    expect(history.reduce((sum, metrics) => sum + metrics.localSearchAccepts, 0)).toBeGreaterThan(0)
    expect(history[0]!.epsilon).toBeGreaterThan(history.at(-1)!.epsilon)
    expect(history[0]!.temperature).toBeGreaterThan(history.at(-1)!.temperature)
    expect(history.at(-1)!.bufferSize).toBe(9) // every plan found, each stored once
    const last = history.slice(-50)
    expect(last.reduce((sum, metrics) => sum + metrics.loss, 0) / last.length).toBeLessThan(history.slice(0, 50).reduce((sum, m) => sum + m.loss, 0) / 50)
    trainer.dispose()
    model.dispose()
  })

  it('samples from the allowed actions: tempered toward uniform, ε uniform, T = 1 the policy itself', async () => {
    const model = createTestModel(5)
    const trainer = createFlowOfReasoningTrainer({
      model,
      tokenizer,
      ...twoStepTask,
      seeds: [0],
      steps: 60,
      rewardExponent: { start: 3, end: 3 },
      seed: 2,
    })
    await trainer.run() // a peaked policy (β = 3)
    trainer.dispose()
    const exact = await terminalDistribution(model)
    const firstShare = (plans: string[][], action: string) => plans.filter((plan) => plan[0] === action).length / plans.length
    const exactFirst = ['a', 'b', 'c'].map((first) => ['a', 'b', 'c'].reduce((sum, second) => sum + exact.get(first + second)!, 0))
    const count = 3000
    const states = createStepwiseEnvironments(tokenizer, [twoSteps], twoStepTask)
    const q = { environment: 0, seed: 0 }
    const plans = async (temperature: number, seed: number, epsilon = 0) =>
      (
        await sampleStepwiseTrajectories(model, tokenizer, states, q, { temperatures: Array(count).fill(temperature), epsilon, random: createRandom(seed) })
      ).map((episode) => [...episode.actions])
    const plain = await plans(1, 1)
    const hot = await plans(1000, 2)
    const greedy = await plans(1, 3, 1)
    expect(exactFirst[0]).toBeGreaterThan(0.5)
    for (const plan of plain) expect(plan).toHaveLength(2)
    ;['a', 'b', 'c'].forEach((action, index) => {
      expect(Math.abs(firstShare(plain, action) - exactFirst[index]!)).toBeLessThan(0.04)
      expect(Math.abs(firstShare(hot, action) - 1 / 3)).toBeLessThan(0.04)
      expect(Math.abs(firstShare(greedy, action) - 1 / 3)).toBeLessThan(0.04)
    })
    model.dispose()
  })

  it('stepwiseForwardLogprobs sums the log-probabilities of the chosen actions normalised over the allowed ones', async () => {
    const model = createTestModel(7)
    const exact = await terminalDistribution(model)
    const before = tf.memory().numTensors
    const plans = ['ab', 'cc', 'ba']
    const states = createStepwiseEnvironments(tokenizer, [twoSteps], twoStepTask)
    const q = { environment: 0, seed: 0 }
    const logprobs = tf.tidy(() =>
      stepwiseForwardLogprobs(model, tokenizer, states, [...plans.map((plan) => ({ problem: q, actions: [...plan] })), { problem: q, actions: ['c'] }]),
    )
    const values = await logprobs.data()
    logprobs.dispose()
    expect(tf.memory().numTensors).toBe(before)
    plans.forEach((plan, index) => expect(values[index]).toBeCloseTo(Math.log(exact.get(plan)!), 4))
    const firstC = ['a', 'b', 'c'].reduce((sum, second) => sum + exact.get(`c${second}`)!, 0)
    expect(values[3]).toBeCloseTo(Math.log(firstC), 4) // a partial trajectory: its steps so far
    expect(() => tf.tidy(() => stepwiseForwardLogprobs(model, tokenizer, states, [{ problem: q, actions: ['d'] }]))).toThrow(/not a legal action of plan-v0/)
    model.dispose()
  })

  it("trains with the batch's log-Z estimate instead, for one problem per step and for several", async () => {
    const model = createTestModel(4)
    for (const problemsPerStep of [1, 3]) {
      const trainer = createFlowOfReasoningTrainer({
        model,
        tokenizer,
        ...twoStepTask,
        seeds: [0, 1],
        problemsPerStep,
        logPartition: { mode: 'batch-mean' },
        seed: problemsPerStep,
      })
      const history = await trainer.run({ steps: 3 })
      for (const metrics of history) expect(Number.isFinite(metrics.loss)).toBe(true)
      expect(trainer.logPartitionState().keys).toEqual([])
      trainer.dispose()
    }
    model.dispose()
  })

  it('writes trajectories.jsonl: each action a turn with its tokens, their log-probs and log P_F; training is unchanged; a second run starts the logs over', async () => {
    const run = async (runDirectory: string | undefined) => {
      const model = createTestModel(3)
      const trainer = createFlowOfReasoningTrainer({
        model,
        tokenizer,
        ...twoStepTask,
        seeds: [0, 1],
        problemsPerStep: 2,
        samplesPerProblem: 3,
        localSearch: { tries: 2 },
        seed: 4,
        trajectories: { episodesPerStep: 4 },
        ...(runDirectory === undefined ? {} : { runDirectory }),
      })
      const history = await trainer.run({ steps: 3 })
      const weights = [...model.parameters()].map(([name, variable]) => [name, variable.dataSync().slice()])
      trainer.dispose()
      model.dispose()
      return { history: history.map(({ seconds: _seconds, ...figures }) => figures), weights }
    }
    const runDirectory = join(directory(), 'trajectories')
    const logged = await run(runDirectory)
    const plain = await run(undefined)
    expect(logged.history).toEqual(plain.history)
    expect(logged.weights).toEqual(plain.weights)
    const read = async (name: string) =>
      (await readFile(join(runDirectory, name), 'utf8'))
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as { step: number })
    const records = (await read('trajectories.jsonl')).map((line) => trajectoryRecordSchema.parse(line))
    expect(records.map((record) => record.step)).toEqual([1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3])
    // Step 1 was scored by the starting weights: the tokens' log-probs sum to the action's, and log P_F normalises it.
    const initial = createTestModel(3)
    for (const record of records) {
      expect(record).toMatchObject({ trainer: 'for', episode: { environmentId: 'plan-v0', roles: ['player'], done: true, truncated: false } })
      expect(['on-policy', 'replay', 'local-search']).toContain(record.episode.source)
      expect(record.episode.groupId).toBe(`plan-v0/${record.episode.seed}`)
      const plan = record.turns.map((turn) => turn.action).join('')
      expect(record.episode.returns.player).toBeCloseTo(Math.log(rewards[plan]!), 6)
      for (const [depth, turn] of record.turns.entries()) {
        expect(turn.observation).toBe(`${'qr'[record.episode.seed]}:${plan.slice(0, depth)}>`)
        expect(turn.prompt).toBe(turn.observation)
        expect(turn.tokenIds).toEqual([...tokenizer.encode(turn.action, { addSpecialTokens: false }), tokenizer.eosTokenId])
        expect(turn.tokens).toHaveLength(turn.tokenIds!.length)
        expect(turn.logprobs).toHaveLength(turn.tokenIds!.length)
        expect(turn.legalActions).toEqual(['a', 'b', 'c'])
        if (record.step !== 1) continue
        const [scores] = await actionLogprobs(initial, tokenizer, [{ prompt: turn.prompt!, actions: turn.legalActions! }])
        const chosen = scores![turn.legalActions!.indexOf(turn.action)]!
        expect(turn.logprobs!.reduce((sum: number, value) => sum + value!, 0)).toBeCloseTo(chosen, 4)
        const normaliser = Math.log(scores!.reduce((sum, value) => sum + Math.exp(value), 0))
        expect(turn.actionLogprob).toBeCloseTo(chosen - normaliser, 4)
      }
    }
    initial.dispose()
    // A second run into the same directory: its steps replace the first run's in both logs.
    await run(runDirectory)
    expect((await read('metrics.jsonl')).map((line) => line.step)).toEqual([1, 2, 3])
    expect((await read('trajectories.jsonl')).length).toBe(12)
  })

  it('refuses a bad config, naming the field', () => {
    const model = createTestModel(1)
    const base = { model, tokenizer, ...twoStepTask, seeds: [0] }
    expect(() => createFlowOfReasoningTrainer({ ...base, samplesPerProblem: 0 })).toThrow(/samplesPerProblem/)
    expect(() => createFlowOfReasoningTrainer({ ...base, seeds: [] })).toThrow(/config\.seeds/)
    expect(() => createFlowOfReasoningTrainer({ ...base, seeds: [1, 1] })).toThrow(/config\.seeds.*distinct/)
    expect(() => createFlowOfReasoningTrainer({ ...base, environments: [] })).toThrow(/config\.environments/)
    expect(() => createFlowOfReasoningTrainer({ ...base, environments: [{} as unknown as () => EnvironmentV1] })).toThrow(/config\.environments/)
    expect(() => createFlowOfReasoningTrainer({ ...base, environments: [twoSteps, twoSteps] })).toThrow(/config\.environments.*ids must differ/)
    const twoRoles = planEnvironment({ length: 2, reward: () => 1, roles: ['player0', 'player1'] })
    expect(() => createFlowOfReasoningTrainer({ ...base, environments: [twoRoles] })).toThrow(/config\.environments\[0\].*one/)
    expect(() => createFlowOfReasoningTrainer({ ...base, solved: 'yes' as unknown as number })).toThrow(/config\.solved/)
    expect(() => createFlowOfReasoningTrainer({ ...base, replay: { probabilityEnd: 2 } })).toThrow(/replay\.probabilityEnd/)
    expect(() => createFlowOfReasoningTrainer({ ...base, logPartition: { mode: 'mean' as 'learned' } })).toThrow(/logPartition\.mode/)
    expect(() => createFlowOfReasoningTrainer({ ...base, trajectories: { maxLineBytes: 1 } })).toThrow(/config\.trajectories\.maxLineBytes/)
    expect(() => createFlowOfReasoningTrainer({ ...base, trajectories: { episodesPerStep: -1 } })).toThrow(/config\.trajectories\.episodesPerStep/)
    expect(() => createFlowOfReasoningTrainer({ ...base, chatTemplate: 5 as unknown as string })).toThrow(/config\.chatTemplate/)
    model.dispose()
  })

  it('names the field when a reward is not finite (a zero return under the default log R), an environment lists no actions, or an episode runs past maxTrajectoryLength', async () => {
    const model = createTestModel(1)
    const base = { model, tokenizer, ...twoStepTask, seeds: [0] }
    const infinite = createFlowOfReasoningTrainer({ ...base, logReward: () => Number.NEGATIVE_INFINITY })
    await expect(infinite.step()).rejects.toThrow(/config\.logReward/)
    infinite.dispose()
    const zero = createFlowOfReasoningTrainer({ ...base, environments: [planEnvironment({ length: 2, reward: () => 0 })] })
    await expect(zero.step()).rejects.toThrow(/config\.logReward.*log of the return, 0.*must be positive/)
    zero.dispose()
    const unlisted = createFlowOfReasoningTrainer({ ...base, environments: [planEnvironment({ length: 2, reward: () => 1, legal: () => [] })] })
    await expect(unlisted.step()).rejects.toThrow(/config\.environments.*gives no legalActions/)
    unlisted.dispose()
    const looping = createFlowOfReasoningTrainer({ ...base, environments: [planEnvironment({ length: 100, reward: () => 1 })], maxTrajectoryLength: 3 })
    await expect(looping.step()).rejects.toThrow(/maxTrajectoryLength/)
    looping.dispose()
    model.dispose()
  })

  it("trains on @ludic/games' Blocksworld through the same interface: the legal actions are the environment's, log R its return, P_B its episode's", async () => {
    const model = createTestModel(6)
    const blocksworld = () => createBlocksworld({ blocks: 3, planLength: 2, successReward: 100, failureReward: 0.001 })
    const episodes: number[] = []
    const trainer = createFlowOfReasoningTrainer({
      model,
      tokenizer,
      environments: [blocksworld],
      seeds: [0, 1, 2],
      // The structured state, not the wording: the blocks, the goal and the steps left.
      prompt: (view) => [{ role: 'user', content: `${view.stateKey}>` }],
      chatTemplate: plainChatTemplate,
      solved: 100,
      backwardLogprob: (episode) => {
        episodes.push(episode.actions.length)
        return 0
      },
      samplesPerProblem: 3,
      localSearch: { tries: 4 },
      steps: 4,
      seed: 5,
    })
    const history = await trainer.run()
    expect(history).toHaveLength(4)
    for (const metrics of history) {
      expect(Number.isFinite(metrics.loss)).toBe(true)
      expect(metrics.rewardMean).toBeGreaterThan(0)
      expect(metrics.successRate).toBeGreaterThanOrEqual(0)
    }
    // Every trajectory is a complete episode of at most planLength (2) actions, and log Z is keyed by environment and seed.
    expect(episodes.length).toBe(history.reduce((sum, metrics) => sum + metrics.trajectories, 0))
    for (const length of episodes) expect([1, 2]).toContain(length)
    for (const key of trainer.logPartitionState().keys) expect(key).toMatch(/^blocksworld-v1\/[012]$/)
    trainer.dispose()
    model.dispose()
  })
})

describe('createFlowOfReasoningTrainer checkpoints', () => {
  it('killed after a checkpoint, resumes to the same total with the same weights, log Z, replay buffers and metrics, bit for bit', async () => {
    await expectResumeBitForBit({
      seed: 7,
      directory: join(directory(), 'resume'),
      steps: 6,
      timed: ['seconds'],
      make: (model, runDirectory, resume) =>
        createFlowOfReasoningTrainer({
          model,
          tokenizer,
          ...twoStepTask,
          seeds: [0, 1],
          steps: 6,
          samplesPerProblem: 3,
          localSearch: { tries: 2 },
          replay: { probabilityStart: 0.5, probabilityEnd: 0.5 },
          optimizer: { learningRate: 1e-2 },
          runDirectory,
          checkpointEvery: 2,
          resume,
        }),
      ownWeights: (trainer) => trainer.logPartitionState(),
    })
  })
})
