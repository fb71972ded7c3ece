import { fileURLToPath } from 'node:url'
import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, type Sample } from '@ludic/core'
import { AsyncCollectorError, createAsyncCollector } from '@ludic/rollout'
import { sequenceLogprobs } from '@ludic/model'
import { initTensors } from '@ludic/tensors'
import { beforeAll, describe, expect, it } from 'vitest'
import { importanceWeights } from './experience/stages.js'
import type { AsyncRolloutConfig } from './rl-config.js'
import { createRlTrainer } from './rl-trainer.js'
import { weightsPayload, type ModelRolloutWorkerData, type RolloutAnnotation } from './rollout-worker.js'
import { responseLogprobs } from './sequences.js'
import { createSftTrainer } from './sft-trainer.js'
import { createPickEnvironment, createTestModel, tokenizer } from './test/support.js'

// Worker threads run the built rollout entries (dist/) and load this TypeScript setup through tsx.
const setupModule = fileURLToPath(new URL('./test/async-setup.ts', import.meta.url))
const asyncRollout = (extra: Partial<AsyncRolloutConfig> = {}): AsyncRolloutConfig => ({
  setupModule,
  setupData: { roles: ['player0'] },
  backend: 'wasm',
  ...extra,
})

beforeAll(async () => {
  await initTensors({ backend: 'wasm', verbose: false })
})

const prompt = (seed: number) =>
  tokenizer.encode(tokenizer.applyChatTemplate!([{ role: 'user', content: `game ${seed}: player0 picks a or b` }], { addGenerationPrompt: true }), {
    addSpecialTokens: false,
  })

/** P(a) against P(b) at the prompts the game shows, averaged. */
function probabilityOfA(model: ReturnType<typeof createTestModel>): number {
  return tf.tidy(() => {
    const promptIds = [0, 1, 2, 3, 4, 5, 6].flatMap((seed) => [prompt(seed), prompt(seed)])
    const responseIds = promptIds.map((_, index) => tokenizer.encode(index % 2 === 0 ? 'a' : 'b', { addSpecialTokens: false }))
    const logprobs = sequenceLogprobs(model, { promptIds, responseIds }).logprobs.dataSync()
    let total = 0
    for (let index = 0; index < logprobs.length; index += 2) total += Math.exp(logprobs[index]!) / (Math.exp(logprobs[index]!) + Math.exp(logprobs[index + 1]!))
    return total / (logprobs.length / 2)
  })
}

describe('createRlTrainer with asynchronous collection', () => {
  it('learns from batches played in a worker thread with weights at most one step old, importance-corrected', async () => {
    const model = createTestModel(2)
    const examples = [0, 1, 2, 3, 4, 5, 6].flatMap((seed) =>
      ['a', 'b'].map((letter) => ({ promptIds: prompt(seed), responseIds: tokenizer.encode(letter, { addSpecialTokens: false }) })),
    )
    const sft = createSftTrainer({ model, examples, batchSize: 14, optimizer: { learningRate: 1e-2 }, seed: 1 })
    await sft.run({ steps: 25 })
    sft.dispose()
    const before = probabilityOfA(model)
    const trainer = createRlTrainer({
      model,
      tokenizer,
      optimizer: { learningRate: 1e-2 },
      batch: { episodesPerStep: 16, miniBatchSize: 16, ppoEpochs: 2, maxTokens: 1 },
      seed: 4,
      asyncRollout: asyncRollout(),
    })
    const tensors: number[] = []
    const history = await trainer.run({ steps: 15, onStep: () => void tensors.push(tf.memory().numTensors) })
    const after = probabilityOfA(model)
    expect(before).toBeLessThan(0.7)
    expect(after).toBeGreaterThan(0.9)
    expect(history.at(-1)!['reward/pick-v1/player0']).toBeGreaterThan(history[0]!['reward/pick-v1/player0']!)
    // The first batch is played with the starting weights; later ones with weights one update old while the
    // trainer worked on the previous batch (pipelined), never older than the bound.
    expect(history[0]!.staleness).toBe(0)
    expect(history.every((metrics) => metrics.staleness! >= 0 && metrics.staleness! <= 1)).toBe(true)
    expect(history.some((metrics) => metrics.staleness === 1)).toBe(true)
    for (const metrics of history) {
      expect(metrics.importanceWeightMean).toBeGreaterThan(0)
      expect(metrics.importanceWeightMean).toBeLessThanOrEqual(2)
      expect(Number.isFinite(metrics.loss)).toBe(true)
    }
    // Every step leaves the tensor count unchanged on the trainer's thread.
    expect(new Set(tensors.slice(1)).size).toBe(1)
    trainer.dispose()
    model.dispose()
  })

  it('plays in the worker threads on the generation engine (batch.engine): steps that train, weights at most one step old', async () => {
    const model = createTestModel(3)
    const trainer = createRlTrainer({
      model,
      tokenizer,
      optimizer: { learningRate: 1e-2 },
      batch: { episodesPerStep: 8, miniBatchSize: 8, ppoEpochs: 1, maxTokens: 2, engine: { maxSequenceLength: 128 } },
      seed: 4,
      asyncRollout: asyncRollout(),
    })
    try {
      const history = await trainer.run({ steps: 3 })
      expect(history).toHaveLength(3)
      for (const metrics of history) {
        expect(metrics.episodes).toBe(8)
        expect(Number.isFinite(metrics.loss)).toBe(true)
        expect(metrics.staleness).toBeLessThanOrEqual(1)
        // Per token (partial rollouts): the oldest token is the batch's, the mean between 0 and it.
        expect(metrics.tokenStalenessMax).toBe(metrics.staleness)
        expect(metrics.tokenStalenessMean).toBeGreaterThanOrEqual(0)
        expect(metrics.tokenStalenessMean).toBeLessThanOrEqual(metrics.staleness!)
      }
    } finally {
      trainer.dispose()
      model.dispose()
    }
  })

  it('fails clearly when the setup module fails in the workers, and rejects bad configurations', async () => {
    const model = createTestModel(3)
    const failing = createRlTrainer({
      model,
      tokenizer,
      asyncRollout: asyncRollout({ setupData: { roles: ['player0'], fail: true } }),
      batch: { episodesPerStep: 2, maxTokens: 1 },
    })
    const error = await failing.step().catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(AsyncCollectorError)
    expect((error as Error).message).toMatch(/rollout worker 0 failed to start: Error: setup refused for this test/)
    failing.dispose()

    expect(() => createRlTrainer({ model, tokenizer })).toThrow(/config.environments.*is needed \(or config.asyncRollout/)
    expect(() => createRlTrainer({ model, tokenizer, environments: [() => createPickEnvironment()], asyncRollout: asyncRollout() })).toThrow(
      /config.environments.*must not be given with config.asyncRollout/,
    )
    expect(() => createRlTrainer({ model, tokenizer, asyncRollout: asyncRollout({ pushEvery: 3, maxStaleness: 2 }) })).toThrow(
      /config.asyncRollout.maxStaleness.*at least config.asyncRollout.pushEvery \(3\)/,
    )
    expect(() => createRlTrainer({ model, tokenizer, asyncRollout: asyncRollout(), recomputeOldLogprobs: false })).toThrow(InvalidArgumentError)
    expect(() => createRlTrainer({ model, tokenizer, asyncRollout: asyncRollout({ importanceCap: 0.5 }) })).toThrow(/config.asyncRollout.importanceCap/)
    model.dispose()
  })
})

describe('the rollout worker module', () => {
  it("computes each batch's reference log-probs in the worker, equal to the trainer's own forward pass", async () => {
    const model = createTestModel(6)
    const collector = createAsyncCollector({
      worker: fileURLToPath(new URL('../dist/rollout-worker.js', import.meta.url)),
      workerData: {
        setupModule,
        setupData: { roles: ['player0', 'player1'] },
        modelConfig: model.config,
        weights: weightsPayload(model.parameters()),
        reference: weightsPayload(model.parameters()),
        backend: 'wasm',
        maxBatch: 8,
        seed: 1,
        vocabSize: tokenizer.vocabSize,
        chunkSize: 3,
        temperature: 1,
      } satisfies ModelRolloutWorkerData,
      episodesPerBatch: 4,
      generation: { maxTokens: 3 },
    })
    try {
      await collector.start()
      const batch = await collector.next(0)
      const samples = batch.samples.filter((sample) => sample.responseTokenIds.length > 0)
      const fromWorker = (batch.annotation as RolloutAnnotation).referenceLogprobs!
      const here = await responseLogprobs(
        model,
        samples.map((sample) => ({ promptIds: sample.promptTokenIds, responseIds: sample.responseTokenIds })),
        3,
      )
      expect(fromWorker).toHaveLength(samples.length)
      fromWorker.forEach((row, index) => {
        expect(row).toHaveLength(here[index]!.length)
        row.forEach((value, column) => expect(value).toBeCloseTo(here[index]![column]!, 5))
        // The rollout's own log-probs (KV-cached decode, same weights) agree too.
        samples[index]!.rolloutLogprobs.forEach((value, column) => expect(value).toBeCloseTo(row[column]!, 4))
      })
    } finally {
      await collector.close()
      model.dispose()
    }
  })
})

describe('importanceWeights', () => {
  it('is the per-token ratio of current to rollout probabilities, truncated at the cap', () => {
    const sample = (rolloutLogprobs: number[]) => ({ rolloutLogprobs: Float32Array.from(rolloutLogprobs) }) as unknown as Sample
    const { weights, mean, truncated } = importanceWeights(
      [Float32Array.from([-1, -0.5]), Float32Array.from([-3])],
      [sample([-1, -1]), sample([-0.5])].map((each) => each.rolloutLogprobs),
      2,
    )
    expect(weights[0]![0]).toBeCloseTo(1, 6)
    expect(weights[0]![1]).toBeCloseTo(Math.exp(0.5), 6)
    expect(weights[1]![0]).toBeCloseTo(Math.exp(-2.5), 6)
    expect(mean).toBeCloseTo((1 + Math.exp(0.5) + Math.exp(-2.5)) / 3, 6)
    expect(truncated).toBe(0)
    const capped = importanceWeights([Float32Array.from([0])], [sample([-5]).rolloutLogprobs], 2)
    expect(capped.weights[0]![0]).toBe(2)
    expect(capped.truncated).toBe(1)
  })
})
