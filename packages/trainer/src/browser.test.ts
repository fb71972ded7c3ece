import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, type PreferencePair } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as browser from './browser.js'
import { createRlTrainer, createSftTrainer, warmUp, type RlTrainerConfig, type RunLoggerV1, type StepMetrics } from './browser.js'
import * as node from './index.js'
import { setTrainerPlatform, type TrainerPlatform } from './platform.js'
import { createPickEnvironment, createTestModel, tokenizer, useBackendAndDirectory } from './test/support.js'

// The browser entry's module graph with nothing registered, as in a browser: the Node entry's registration (the test
// project's setup file) is taken away for this file's tests and put back after them.
useBackendAndDirectory('ludic-trainer-browser-')
let nodeParts: TrainerPlatform | undefined
beforeAll(() => {
  nodeParts = setTrainerPlatform(undefined)
})
afterAll(() => {
  setTrainerPlatform(nodeParts)
})

const rlConfig = (model: ReturnType<typeof createTestModel>, extra: Partial<RlTrainerConfig> = {}): RlTrainerConfig => ({
  model,
  tokenizer,
  environments: [() => createPickEnvironment(['player0', 'player1'])],
  optimizer: { learningRate: 3e-3 },
  batch: { episodesPerStep: 4, miniBatchSize: 4, ppoEpochs: 1, maxTokens: 2 },
  kl: { coefficient: 0.1 },
  seed: 3,
  ...extra,
})

/** `rlConfig` collecting in worker threads (whose setup module gives the environments). */
function asynchronous(model: ReturnType<typeof createTestModel>): RlTrainerConfig {
  const { environments: _, ...config } = rlConfig(model)
  return { ...config, asyncRollout: { setupModule: '/setup.js' } }
}

/** The error `build` throws: an `InvalidArgumentError` naming `argument` and saying it needs the Node entry. */
function refusal(build: () => unknown): InvalidArgumentError {
  let caught: unknown
  try {
    build()
  } catch (error) {
    caught = error
  }
  expect(InvalidArgumentError.isInstance(caught), String(caught)).toBe(true)
  expect((caught as Error).message).toMatch(/needs the Node entry of @ludic\/trainer/)
  return caught as InvalidArgumentError
}

/** The entries' exports by name. */
const browserEntry: Record<string, unknown> = { ...browser }
const nodeEntry: Record<string, unknown> = { ...node }

describe('the browser entry', () => {
  it("has the trainers and their parts under the Node entry's names, and none of the Node-only ones", () => {
    for (const name of [
      'createRlTrainer',
      'checkRlTrainerConfig',
      'createSftTrainer',
      'warmUp',
      'createPreferenceTrainer',
      'actionLogprobs',
      'evaluateAgainst',
      'createRunLoggers',
    ] as const) {
      expect(browserEntry[name], name).toBe(nodeEntry[name])
    }
    for (const name of [
      'loadRunConfig',
      'createJsonlLogger',
      'createTensorBoardLogger',
      'createWandbLogger',
      'readPreferencePairs',
      'createDisaggregatedRolloutSource',
    ]) {
      expect(name in browserEntry, name).toBe(false)
      expect(name in nodeEntry, name).toBe(true)
    }
  })

  it('refuses each Node-only option by name when the trainer is built, leaving no tensor behind', () => {
    const model = createTestModel(31)
    const tensors = tf.memory().numTensors
    expect(refusal(() => createRlTrainer(rlConfig(model, { runDirectory: 'runs/a' }))).argument).toBe('config.runDirectory')
    expect(refusal(() => createRlTrainer(asynchronous(model))).argument).toBe('config.asyncRollout')
    expect(refusal(() => createRlTrainer(rlConfig(model, { loggers: ['tensorboard'] }))).argument).toBe('config.loggers.0')
    expect(refusal(() => createRlTrainer(rlConfig(model, { loggers: [{ kind: 'wandb', mode: 'offline', directory: '/tmp/wandb' }] }))).argument).toBe(
      'config.loggers.0',
    )
    // The reference copy and the optimizer made before each refusal were freed.
    expect(tf.memory().numTensors).toBe(tensors)
    // checkRlTrainerConfig refuses them alike, before a warm-up.
    expect(refusal(() => browser.checkRlTrainerConfig(rlConfig(model, { runDirectory: 'runs/a' }))).argument).toBe('config.runDirectory')
    expect(refusal(() => browser.checkRlTrainerConfig(asynchronous(model))).argument).toBe('config.asyncRollout')
    expect(refusal(() => browser.checkRlTrainerConfig(rlConfig(model, { loggers: ['jsonl', 'tensorboard'] }))).argument).toBe('config.loggers.1')
    // Every trainer's run directory (the reward model's too).
    const examples = [{ prompt: 'x', response: 'y' }]
    expect(refusal(() => createSftTrainer({ model, tokenizer, examples, runDirectory: 'runs/b' })).argument).toBe('config.runDirectory')
    expect(tf.memory().numTensors).toBe(tensors)
    model.dispose()
    const scorer = createTestModel(34)
    expect(refusal(() => browser.createRewardModelTrainer({ model: scorer, tokenizer, maxLength: 48, pairs: [pair], runDirectory: 'runs/c' })).argument).toBe(
      'config.runDirectory',
    )
    scorer.dispose()
  })

  it("trains in memory: each step's metrics through onStep and a logger object, evaluations through the hook; a terminal's progress bar refused", async () => {
    const model = createTestModel(32)
    const logged: StepMetrics[] = []
    const logger: RunLoggerV1 = {
      specificationVersion: 'v1',
      name: 'page',
      start() {},
      log: (metrics) => void logged.push(metrics),
      text() {},
      close() {},
    }
    const evaluatedAt: number[] = []
    const trainer = createRlTrainer(
      rlConfig(model, {
        loggers: ['jsonl', logger], // `jsonl` without a run directory (the default) writes nothing, in a browser too
        evaluateEvery: 1,
        evaluate: async ({ step }) => {
          evaluatedAt.push(step)
          return { score: step / 10 }
        },
      }),
    )
    const told: StepMetrics[] = []
    await expect(trainer.run({ steps: 1, progress: true })).rejects.toThrow(/options\.progress.*needs the Node entry/)
    const taken = await trainer.run({ steps: 2, onStep: (metrics) => void told.push(metrics) })
    expect(taken.map((metrics) => metrics.step)).toEqual([1, 2])
    expect(told).toEqual(taken)
    expect(logged).toEqual(taken)
    expect(evaluatedAt).toEqual([1, 2])
    for (const name of ['loss', 'reward/pick-v1/player0', 'invalidRate', 'tokensPerSecond', 'kl', 'eval/score'])
      expect(Number.isFinite(taken[1]![name]), name).toBe(true)
    await expect(trainer.checkpoint()).rejects.toThrow(/config\.runDirectory.*is needed to save checkpoints/)
    trainer.dispose()
    model.dispose()
  })

  it('warms a model up (the recipes’ warm-up) and trains it on preference pairs', async () => {
    const model = createTestModel(33)
    const tensors = tf.memory().numTensors
    const { nll, history } = await warmUp({
      model,
      tokenizer,
      examples: [{ prompt: 'a?', response: 'b' }],
      steps: 3,
      batchSize: 1,
      learningRate: 1e-2,
      seed: 0,
    })
    expect(history.map((metrics) => metrics.step)).toEqual([1, 2, 3])
    expect(nll).toBe(history[2]!.loss)
    expect(history[2]!.loss).toBeLessThan(history[0]!.loss)
    await expect(warmUp({ model, tokenizer, examples: [{ prompt: 'a?', response: 'b' }], steps: 1, learningRate: 1e-2, progress: true })).rejects.toThrow(
      /options\.progress/,
    )
    await expect(warmUp({ model, tokenizer, examples: [{ prompt: 'a?', response: 'b' }], steps: 1, learningRate: -1 })).rejects.toThrow(/config\.learningRate/)
    expect(tf.memory().numTensors).toBe(tensors) // the warm-up's optimizer freed, also when run refuses
    const preference = browser.createPreferenceTrainer({ model, tokenizer, pairs: [pair, pair], batchSize: 2, optimizer: { learningRate: 1e-2 } })
    const metrics = await preference.step()
    expect(Number.isFinite(metrics.loss)).toBe(true)
    preference.dispose()
    model.dispose()
  })
})

const pair: PreferencePair = { prompt: 'pick:', chosen: ' a', rejected: ' b' }
