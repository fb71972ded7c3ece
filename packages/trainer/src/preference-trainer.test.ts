import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { createRandom, type PreferencePair } from '@ludic/core'
import { applyLora, createModel, sequenceLogprobs, type CausalLanguageModel } from '@ludic/model'
import { dpoLossTypes } from '@ludic/objectives'
import { describe, expect, it } from 'vitest'
import type { PreferencePairIds } from './preference-data.js'
import { createPreferenceTrainer, preferenceLossTypes, type PreferenceLossConfig, type PreferenceTrainerConfig } from './preference-trainer.js'
import { createTestModel, tokenizer, useBackendAndDirectory } from './test/support.js'
import { expectResumeBitForBit } from './test/resume.js'

const directory = useBackendAndDirectory('ludic-preference-')

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

/** Summed log π of each response, straight from `sequenceLogprobs` (the hand computation). */
function handSums(model: CausalLanguageModel, pairs: readonly PreferencePairIds[]): { chosen: number[]; rejected: number[] } {
  const sums = (responses: Int32Array[]): number[] =>
    tf.tidy(() => {
      const { logprobs } = sequenceLogprobs(model, { promptIds: pairs.map((pair) => pair.promptIds), responseIds: responses })
      return tf.sum(logprobs, 1).arraySync() as number[]
    })
  return { chosen: sums(pairs.map((pair) => pair.chosenIds)), rejected: sums(pairs.map((pair) => pair.rejectedIds)) }
}

const createTestModelWithVocabulary = (vocabSize: number): CausalLanguageModel =>
  createModel('tiny', { vocabSize, seed: 0, overrides: { hiddenSize: 16, numAttentionHeads: 2, numHiddenLayers: 1, intermediateSize: 32 } })

const mean = (values: readonly number[]): number => values.reduce((total, value) => total + value, 0) / values.length
const logSigmoid = (x: number): number => -Math.log1p(Math.exp(-x))

describe('createPreferenceTrainer', () => {
  it('DPO: the first step (policy = reference) has loss log 2; the metrics match a hand computation', async () => {
    const model = createTestModel(3)
    const beta = 0.5
    const trainer = createPreferenceTrainer({
      model,
      tokenizer,
      pairs: toyPairs(4, 5),
      batchSize: 4,
      loss: { type: 'sigmoid', beta },
      optimizer: { learningRate: 1e-2 },
    })
    const pairs = trainer.trainPairs
    const reference = handSums(model, pairs)
    const first = await trainer.step()
    expect(first.step).toBe(1)
    expect(first.loss).toBeCloseTo(Math.log(2), 5)
    expect(first['logps/chosen']).toBeCloseTo(mean(reference.chosen), 3)
    expect(first['logps/rejected']).toBeCloseTo(mean(reference.rejected), 3)
    expect(first['rewards/chosen']).toBeCloseTo(0, 4)
    expect(first['rewards/margins']).toBeCloseTo(0, 4)
    expect(first.grad_norm).toBeGreaterThan(0)
    expect(first.learning_rate).toBe(1e-2)

    // The second step's metrics come from the weights after the first: every pair is in the batch (batchSize 4).
    const policy = handSums(model, pairs)
    const chosenRewards = policy.chosen.map((value, index) => beta * (value - reference.chosen[index]!))
    const rejectedRewards = policy.rejected.map((value, index) => beta * (value - reference.rejected[index]!))
    const margins = chosenRewards.map((reward, index) => reward - rejectedRewards[index]!)
    const second = await trainer.step()
    expect(second.loss).toBeCloseTo(mean(margins.map((margin) => -logSigmoid(margin))), 4)
    expect(second['rewards/chosen']).toBeCloseTo(mean(chosenRewards), 4)
    expect(second['rewards/rejected']).toBeCloseTo(mean(rejectedRewards), 4)
    expect(second['rewards/margins']).toBeCloseTo(mean(margins), 4)
    expect(second['rewards/accuracies']).toBe(mean(margins.map((margin) => (margin > 0 ? 1 : 0))))
    expect(second['logps/chosen']).toBeCloseTo(mean(policy.chosen), 3)
    expect(second['logps/rejected']).toBeCloseTo(mean(policy.rejected), 3)
    trainer.dispose()
    model.dispose()
  })

  it("takes another model's log-probs as the reference, or none (TRL's reference_free); conversational pairs through the chat template", async () => {
    const model = createTestModel(3)
    const referenceModel = createTestModel(8)
    const beta = 0.2
    const pairs: PreferencePair[] = toyPairs(3, 6).map(({ prompt, chosen, rejected }) => ({
      prompt: [{ role: 'user', content: prompt as string }],
      chosen: [{ role: 'assistant', content: chosen as string }],
      rejected: [{ role: 'assistant', content: rejected as string }],
    }))
    const withModel = createPreferenceTrainer({
      model,
      tokenizer,
      pairs,
      batchSize: 3,
      reference: referenceModel,
      loss: { beta },
      optimizer: { learningRate: 1e-6 },
    })
    expect(tokenizer.decode(withModel.trainPairs[0]!.promptIds)).toMatch(/^user: .*\nassistant: $/)
    const reference = handSums(referenceModel, withModel.trainPairs)
    const first = await withModel.step()
    expect(first['rewards/chosen']).toBeCloseTo(beta * (first['logps/chosen'] - mean(reference.chosen)), 3)
    expect(first['rewards/rejected']).toBeCloseTo(beta * (first['logps/rejected'] - mean(reference.rejected)), 3)
    withModel.dispose()
    const free = createPreferenceTrainer({ model, tokenizer, pairs, batchSize: 3, reference: 'none', loss: { beta }, optimizer: { learningRate: 1e-6 } })
    const metrics = await free.step()
    expect(metrics['rewards/chosen']).toBeCloseTo(beta * metrics['logps/chosen'], 5)
    free.dispose()
    const otherVocabulary = createTestModelWithVocabulary(300)
    expect(() => createPreferenceTrainer({ model, tokenizer, pairs, reference: otherVocabulary })).toThrow(/config\.reference.*vocabulary/)
    otherVocabulary.dispose()
    model.dispose()
    referenceModel.dispose()
  })

  it('leaves tf.memory().numTensors unchanged across steps and evaluations, and frees its own on dispose', async () => {
    const model = createTestModel(4)
    const before = tf.memory().numTensors
    const trainer = createPreferenceTrainer({
      model,
      tokenizer,
      pairs: toyPairs(6, 1),
      heldOut: toyPairs(3, 2),
      batchSize: 3,
      optimizer: { learningRate: 1e-3 },
    })
    await trainer.step()
    const afterFirst = tf.memory().numTensors
    await trainer.step()
    await trainer.evaluate()
    await trainer.step()
    expect(tf.memory().numTensors).toBe(afterFirst)
    trainer.dispose()
    expect(tf.memory().numTensors).toBe(before)
    model.dispose()
  })

  it('learns the toy rule: held-out accuracy rises from 0.5 to near 1 for DPO, IPO and SimPO', async () => {
    const accuracies: Record<string, { start: number; end: number }> = {}
    for (const type of ['sigmoid', 'ipo', 'simpo'] as const) {
      const model = createTestModel(1)
      const trainer = createPreferenceTrainer({
        model,
        tokenizer,
        pairs: toyPairs(48, 10),
        heldOut: toyPairs(24, 11),
        loss: { type },
        batchSize: 8,
        steps: 30,
        optimizer: { learningRate: 3e-3 },
      })
      const start = (await trainer.evaluate()).accuracy
      const history = await trainer.run()
      expect(history).toHaveLength(30)
      const end = await trainer.evaluate()
      accuracies[type] = { start, end: end.accuracy }
      expect(end.margin).toBeGreaterThan(0)
      trainer.dispose()
      model.dispose()
    }
    // With a reference, the policy starts equal to it: every pair is a tie (½).
    expect(accuracies.sigmoid!.start).toBe(0.5)
    expect(accuracies.ipo!.start).toBe(0.5)
    for (const type of ['sigmoid', 'ipo', 'simpo']) expect(accuracies[type]!.end, type).toBeGreaterThanOrEqual(0.9)
  })

  const lossConfigs: PreferenceLossConfig[] = [
    ...dpoLossTypes.map((type) => (type === 'exo_pair' ? { type, labelSmoothing: 0.1 } : { type })),
    { type: 'simpo' },
    { type: 'orpo' },
    { type: 'kto' },
    { type: 'kto', lossType: 'apo_zero_unpaired' },
  ]
  it('covers every loss type', () => {
    expect(new Set(lossConfigs.map((config) => config.type))).toEqual(new Set(preferenceLossTypes))
  })
  it.each(lossConfigs.map((loss) => [JSON.stringify(loss), loss] as const))('%s constructs and takes one finite step', async (_, loss) => {
    const model = createTestModel(0)
    const trainer = createPreferenceTrainer({ model, tokenizer, pairs: toyPairs(3, 7), batchSize: 2, loss, optimizer: { learningRate: 1e-3 } })
    const metrics = await trainer.step()
    for (const [name, value] of Object.entries(metrics)) expect(Number.isFinite(value), name).toBe(true)
    if (loss.type === 'orpo') expect(metrics.nll_loss).toBeGreaterThan(0)
    if (loss.type === 'kto' && loss.lossType === undefined) expect(metrics.kl).toBeCloseTo(0, 4) // policy = reference at the first step
    trainer.dispose()
    model.dispose()
  })

  it('updates only the trainable parameters (LoRA adapters)', async () => {
    const model = createTestModel(2)
    const adapters = applyLora(model, { rank: 2 })
    const trainable = [...model.trainableParameters().keys()]
    expect(trainable.every((name) => name.includes('lora_'))).toBe(true)
    const snapshot = () => new Map([...model.parameters()].map(([name, variable]) => [name, Float32Array.from(variable.dataSync())]))
    const before = snapshot()
    const trainer = createPreferenceTrainer({ model, tokenizer, pairs: toyPairs(4, 3), batchSize: 4, optimizer: { learningRate: 1e-2 } })
    expect(trainer.optimizer.parameterNames).toEqual(trainable)
    await trainer.step()
    await trainer.step()
    const after = snapshot()
    for (const [name, values] of before) {
      const changed = values.some((value, index) => value !== after.get(name)![index])
      if (!trainable.includes(name)) expect(changed, name).toBe(false)
      else if (name.includes('lora_B')) expect(changed, name).toBe(true) // B starts at 0 and gets the first gradient
    }
    expect([...before.keys()].some((name) => name.includes('lora_B'))).toBe(true)
    trainer.dispose()
    adapters.remove()
    model.dispose()
  })

  it('holds out a seeded share, runs its planned steps, evaluates every few steps and logs metrics.jsonl', async () => {
    const model = createTestModel(5)
    const runDirectory = join(directory(), 'run')
    const config: PreferenceTrainerConfig = {
      model,
      tokenizer,
      pairs: toyPairs(10, 4),
      validationShare: 0.3,
      epochs: 2,
      batchSize: 4,
      evaluateEvery: 2,
      runDirectory,
      seed: 9,
      optimizer: { learningRate: 1e-3 },
    }
    const trainer = createPreferenceTrainer(config)
    expect(trainer.heldOutPairs).toHaveLength(3)
    expect(trainer.trainPairs).toHaveLength(7)
    expect(trainer.plannedSteps).toBe(4) // ⌈2 · 7 / 4⌉
    const again = createPreferenceTrainer(config)
    expect(again.heldOutPairs).toEqual(trainer.heldOutPairs)
    again.dispose()
    const written: string[] = []
    const history = await trainer.run({ progress: { write: (text) => written.push(text) } })
    expect(history.map((metrics) => metrics.step)).toEqual([1, 2, 3, 4])
    expect(history[0]!['eval/accuracy']).toBeUndefined()
    expect(history[1]!['eval/accuracy']).toBeGreaterThanOrEqual(0)
    expect(written.join('')).toContain('preference (sigmoid)')
    const lines = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8')).trim().split('\n')
    expect(lines.map((line) => (JSON.parse(line) as { step: number }).step)).toEqual([1, 2, 3, 4])
    expect(JSON.parse(lines[0]!)).toHaveProperty('rewards/accuracies')
    expect(await trainer.run()).toEqual([]) // nothing left of the plan

    // A signal stops the run after the current step.
    const controller = new AbortController()
    const stopped = await trainer.run({ steps: 5, signal: controller.signal, onStep: () => controller.abort() })
    expect(stopped).toHaveLength(1)
    trainer.dispose()
    model.dispose()
  })

  it('names the field of a bad config', async () => {
    const model = createTestModel(6)
    const base = { model, tokenizer, pairs: toyPairs(3, 1) }
    const cases: [Partial<PreferenceTrainerConfig> & Record<string, unknown>, RegExp][] = [
      [{ loss: { type: 'dpo' as 'sigmoid' } }, /config\.loss\.type.*must be one of 'sigmoid', 'hinge'.*'simpo', 'orpo', 'kto'/],
      [{ loss: { type: 'sigmoid', beta: -1 } }, /config\.loss\.beta/],
      [{ loss: { type: 'exo_pair' } }, /config\.loss\.labelSmoothing.*exo_pair/],
      [{ loss: { type: 'simpo', gamma: 1, alpha: 2 } as PreferenceLossConfig }, /config\.loss.*alpha/],
      [{ loss: { type: 'simpo' }, reference: 'initial' }, /config\.reference.*reference-free/],
      [{ steps: 3, epochs: 1 }, /config\.epochs/],
      [{ maxLength: 1_000_000 }, /config\.maxLength.*context/],
      [{ maxLength: 8, maxPromptLength: 8 }, /config\.maxPromptLength/],
      [{ pairs: [] }, /config\.pairs/],
      [{ pairs: [{ prompt: 'a', chosen: 3, rejected: 'b' }] as unknown as PreferencePair[] }, /config\.pairs\.0\.chosen/],
      [{ pairs: [{ chosen: 'yes', rejected: 'no' }] }, /config\.pairs\[0\]\.prompt/],
      [{ heldOut: toyPairs(2, 2), validationShare: 0.5 }, /config\.validationShare/],
      [{ batchSize: 0 }, /config\.batchSize/],
    ]
    for (const [overrides, pattern] of cases)
      expect(() => createPreferenceTrainer({ ...base, ...overrides } as PreferenceTrainerConfig), String(pattern)).toThrow(pattern)
    const trainer = createPreferenceTrainer(base)
    await expect(trainer.evaluate()).rejects.toThrow(/config\.heldOut/)
    trainer.dispose()
    model.dispose()
  })
})

describe('createPreferenceTrainer checkpoints', () => {
  for (const loss of [{ type: 'sigmoid' }, { type: 'kto' }] as const) {
    it(`${loss.type}: killed after a checkpoint, resumes to the same total with the same weights and metrics (the cached reference log-probs kept), bit for bit`, async () => {
      await expectResumeBitForBit({
        seed: 4,
        directory: join(directory(), loss.type),
        make: (model, runDirectory, resume) =>
          createPreferenceTrainer({
            model,
            tokenizer,
            pairs: toyPairs(5, 9),
            heldOut: toyPairs(3, 10),
            batchSize: 2,
            loss,
            evaluateEvery: 2,
            optimizer: { learningRate: 1e-2 },
            runDirectory,
            checkpointEvery: 2,
            resume,
          }),
      })
    })
  }
})
