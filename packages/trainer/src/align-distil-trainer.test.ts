import * as tf from '@tensorflow/tfjs-core'
import { createRandom, type PreferencePair } from '@ludic/core'
import { CausalLanguageModel, sequenceLogprobs } from '@ludic/model'
import { describe, expect, it } from 'vitest'
import { createAlignDistilTrainer, preferenceAccuracy, responseLogits, trainContrastiveDpoModels } from './align-distil-trainer.js'
import { createTestModel, tokenizer, useBackendAndDirectory } from './test/support.js'
import { expectResumeBitForBit } from './test/resume.js'
import { join } from 'node:path'

const directory = useBackendAndDirectory('ludic-align-distil-')

const words = ['red', 'blue', 'green', 'cat', 'dog', 'sun', 'tree', 'fish', 'moon', 'rock', 'bird', 'leaf']

/** The toy rule: the chosen response ends with 'yes', the rejected one with 'no' (random words before). */
function toyPairs(count: number, seed: number): PreferencePair[] {
  const random = createRandom(seed)
  return Array.from({ length: count }, () => ({
    prompt: `${random.choice(words)} ${random.choice(words)}?`,
    chosen: ` ${random.choice(words)} yes`,
    rejected: ` ${random.choice(words)} no`,
  }))
}

const copyOf = (model: CausalLanguageModel) => new CausalLanguageModel(model.config, model.parameters())
const snapshot = (model: CausalLanguageModel): Float32Array[] => [...model.parameters().values()].map((parameter) => parameter.dataSync() as Float32Array)
const mean = (values: readonly number[]): number => values.reduce((total, value) => total + value, 0) / values.length

describe('responseLogits', () => {
  it("gives the logits whose log-softmax at each response token is sequenceLogprobs' log-prob", () => {
    const model = createTestModel(1)
    const sequences = {
      promptIds: [Int32Array.from([5, 6, 7]), Int32Array.from([9])],
      responseIds: [Int32Array.from([10, 11]), Int32Array.from([12, 13, 14])],
    }
    const before = tf.memory().numTensors
    const [fromLogits, expected, mask] = tf.tidy(() => {
      const { logits, mask } = responseLogits(model, sequences)
      const ids = tf.tensor2d([10, 11, 0, 12, 13, 14], [2, 3], 'int32')
      const gathered = tf.sum(tf.mul(tf.logSoftmax(logits), tf.oneHot(ids, logits.shape[2])), -1)
      return [tf.mul(gathered, mask).arraySync(), sequenceLogprobs(model, sequences).logprobs.arraySync(), mask.arraySync()]
    })
    expect(tf.memory().numTensors).toBe(before)
    expect(mask).toEqual([
      [1, 1, 0],
      [1, 1, 1],
    ])
    ;(fromLogits as number[][]).flat().forEach((value, index) => expect(value).toBeCloseTo((expected as number[][]).flat()[index]!, 5))
    model.dispose()
  })
})

describe('createAlignDistilTrainer', () => {
  it('a teacher equal to the policy gives zero loss; evaluate() starts at ½ (every pair a tie)', async () => {
    const model = createTestModel(2)
    const twin = copyOf(model)
    const pairs = toyPairs(6, 1)
    const trainer = createAlignDistilTrainer({ model, tokenizer, dpoModel: twin, reverseDpoModel: copyOf(model), pairs, heldOut: pairs, batchSize: 3 })
    expect(await trainer.evaluate()).toEqual({ accuracy: 0.5, margin: 0, pairs: 6 })
    // Contrastive with π_dpo = π_dpo⁻ = π_θ: z* = z_dpo, KL 0, D_TVD 0, α_t = ε (the loss weighs float noise by β₀/ε = 100).
    const metrics = await trainer.step()
    expect(Math.abs(metrics.loss)).toBeLessThan(1e-4)
    expect(metrics.teacherKl).toBeCloseTo(0, 6)
    expect(metrics.totalVariationMean).toBeCloseTo(0, 6)
    expect(metrics.extrapolationMean).toBeCloseTo(0.001, 6)
    expect(metrics.grad_norm).toBeLessThan(1e-2)
    expect(metrics.validTokens).toBeGreaterThan(3)
    trainer.dispose()
    model.dispose()
    twin.dispose()
  })

  it('trains the teachers, then distils: loss finite and falling, teachers unchanged, no leak, accuracy above chance', async () => {
    const start = createTestModel(3)
    const pairs = toyPairs(16, 2)
    const heldOut = toyPairs(16, 3)
    const startWeights = snapshot(start)
    const { dpoModel, reverseDpoModel, history } = await trainContrastiveDpoModels({
      model: start,
      tokenizer,
      pairs,
      steps: 30,
      batchSize: 8,
      loss: { type: 'sigmoid', beta: 0.1 },
      optimizer: { learningRate: 1e-2 },
    })
    expect(history.dpo).toHaveLength(30)
    expect(history.reverseDpo).toHaveLength(30)
    expect(snapshot(start)).toEqual(startWeights) // the starting model is copied, never trained
    // The DPO teacher prefers the chosen responses, the reverse-DPO teacher the rejected ones.
    const encoded = createAlignDistilTrainer({ model: start, tokenizer, dpoModel, reverseDpoModel, pairs: heldOut })
    const dpoAccuracy = await preferenceAccuracy({ model: dpoModel, reference: start, pairs: encoded.trainPairs })
    const reverseAccuracy = await preferenceAccuracy({ model: reverseDpoModel, reference: start, pairs: encoded.trainPairs })
    encoded.dispose()
    expect(dpoAccuracy.accuracy).toBeGreaterThan(0.8)
    expect(reverseAccuracy.accuracy).toBeLessThan(0.2)

    const teacherWeights = [snapshot(dpoModel), snapshot(reverseDpoModel)]
    const policy = copyOf(start)
    const trainer = createAlignDistilTrainer({
      model: policy,
      tokenizer,
      dpoModel,
      reverseDpoModel,
      pairs,
      heldOut,
      batchSize: 8,
      steps: 24,
      optimizer: { learningRate: 1e-2 },
      loss: { beta: 0.1 },
    })
    await trainer.step() // warm up the kernels' and the optimizer's tensors
    const before = tf.memory().numTensors
    const history2 = await trainer.run({ steps: 24 }) // the total: 23 more after the first
    expect(tf.memory().numTensors).toBe(before)
    expect(history2.map((metrics) => metrics.step)).toEqual(Array.from({ length: 23 }, (_, index) => index + 2))
    for (const metrics of history2) {
      expect(Number.isFinite(metrics.loss)).toBe(true)
      expect(metrics.extrapolationMean).toBeGreaterThan(0.001)
    }
    expect(mean(history2.slice(-5).map((metrics) => metrics.loss))).toBeLessThan(0.7 * mean(history2.slice(0, 5).map((metrics) => metrics.loss)))
    expect(mean(history2.slice(-5).map((metrics) => metrics.teacherKl))).toBeLessThan(0.7 * mean(history2.slice(0, 5).map((metrics) => metrics.teacherKl)))
    expect([snapshot(dpoModel), snapshot(reverseDpoModel)]).toEqual(teacherWeights)
    const evaluation = await trainer.evaluate()
    expect(evaluation.pairs).toBe(16)
    expect(evaluation.accuracy).toBeGreaterThan(0.7) // the student learnt the teacher's preference on unseen pairs (chance: ½)
    expect(evaluation.margin).toBeGreaterThan(0)
    expect(await trainer.evaluate(heldOut)).toEqual(evaluation)
    trainer.dispose()
    for (const model of [start, dpoModel, reverseDpoModel, policy]) model.dispose()
  })

  it('the reference variant needs no reverse-DPO model and logs eval metrics every k steps', async () => {
    const model = createTestModel(4)
    const dpoModel = copyOf(model)
    const pairs = toyPairs(4, 4)
    const trainer = createAlignDistilTrainer({
      model,
      tokenizer,
      dpoModel,
      pairs,
      heldOut: pairs,
      loss: { variant: 'reference', extrapolation: 'fixed', extrapolationCoefficient: 2 },
      evaluateEvery: 2,
      batchSize: 2,
      optimizer: { learningRate: 1e-3 },
    })
    expect(trainer.plannedSteps).toBe(2)
    const history = await trainer.run()
    expect(history).toHaveLength(2)
    expect(history[0]!['eval/accuracy']).toBeUndefined()
    expect(history[1]!['eval/accuracy']).toBeGreaterThanOrEqual(0)
    expect(history[0]!.extrapolationMean).toBeCloseTo(2, 6)
    trainer.dispose()
    model.dispose()
    dpoModel.dispose()
  })

  it('rejects bad configs, naming the field', async () => {
    const model = createTestModel(5)
    const other = copyOf(model)
    const pairs = toyPairs(2, 5)
    const base = { model, tokenizer, dpoModel: other, reverseDpoModel: other, pairs }
    expect(() => createAlignDistilTrainer({ ...base, batchSize: 0 })).toThrow(/config\.batchSize/)
    expect(() => createAlignDistilTrainer({ ...base, loss: { beta: -1 } })).toThrow(/config\.loss\.beta/)
    expect(() => createAlignDistilTrainer({ ...base, reverseDpoModel: undefined })).toThrow(/config\.reverseDpoModel/)
    expect(() => createAlignDistilTrainer({ ...base, dpoModel: model })).toThrow(/config\.dpoModel/)
    expect(() => createAlignDistilTrainer({ ...base, pairs: [] })).toThrow(/config\.pairs/)
    expect(() => createAlignDistilTrainer({ ...base, maxLength: 10, maxPromptLength: 10 })).toThrow(/config\.maxPromptLength/)
    expect(() => createAlignDistilTrainer({ ...base, dpoModel: 'model' as never })).toThrow(/config\.dpoModel/)
    await expect(trainContrastiveDpoModels({ model, tokenizer, pairs, steps: 1, loss: { type: 'simpo' } })).rejects.toThrow(/config\.loss\.type/)
    await expect(trainContrastiveDpoModels({ model, tokenizer, pairs, steps: 0 })).rejects.toThrow(/config\.steps/)
    const trainer = createAlignDistilTrainer(base)
    await expect(trainer.evaluate()).rejects.toThrow(/pairs/)
    trainer.dispose()
    model.dispose()
    other.dispose()
  })
})

describe('createAlignDistilTrainer checkpoints', () => {
  it('killed after a checkpoint, resumes to the same total with the same weights and metrics (its reference copy restored), bit for bit', async () => {
    const dpoModel = createTestModel(7)
    const reverseDpoModel = createTestModel(8)
    await expectResumeBitForBit({
      seed: 6,
      directory: join(directory(), 'resume'),
      make: (model, runDirectory, resume) =>
        createAlignDistilTrainer({
          model,
          tokenizer,
          dpoModel,
          reverseDpoModel,
          pairs: toyPairs(5, 4),
          heldOut: toyPairs(3, 5),
          batchSize: 2,
          evaluateEvery: 2,
          optimizer: { learningRate: 1e-2 },
          runDirectory,
          checkpointEvery: 2,
          resume,
        }),
    })
    dpoModel.dispose()
    reverseDpoModel.dispose()
  })
})
