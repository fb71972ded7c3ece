import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { scoreWeightName } from '@ludic/model'
import { describe, expect, it } from 'vitest'
import { readPreferencePairs } from './preference-file.js'
import { createRewardModelTrainer } from './reward-model-trainer.js'
import { createTestModel, tokenizer, useBackendAndDirectory } from './test/support.js'
import { expectResumeBitForBit } from './test/resume.js'

const directory = useBackendAndDirectory('ludic-reward-model-trainer-')

// A toy preference: a polite reply beats a rude one, whatever the question.
const questions = ['Where is the ship?', 'Can you help me?', 'What time is it?', 'Who are you?', 'Is it raining?', 'Tell me a story.']
const polite = ['Gladly, friend.', 'Of course, dear.', 'With pleasure!']
const rude = ['Go away.', 'Ugh, no.', 'Whatever!']
const toyPairs = questions.flatMap((question, index) => [
  { prompt: `${question} `, chosen: polite[index % 3]!, rejected: rude[index % 3]! },
  { prompt: `${question} `, chosen: polite[(index + 1) % 3]!, rejected: rude[(index + 2) % 3]! },
])

describe('createRewardModelTrainer', () => {
  it('lowers the Bradley–Terry loss on a toy set in a few steps, leaving no tensor behind', async () => {
    const model = createTestModel(1)
    const before = tf.memory().numTensors
    const trainer = createRewardModelTrainer({ model, tokenizer, maxLength: 48, pairs: toyPairs, batchSize: 6, optimizer: { learningRate: 1e-2 }, seed: 3 })
    expect(model.parameters().has(scoreWeightName)).toBe(true)
    const start = await trainer.evaluate(trainer.trainPairs)
    const { history, evaluation } = await trainer.run({ steps: 12 })
    const end = await trainer.evaluate(trainer.trainPairs)
    expect(history.map((metrics) => metrics.step)).toEqual(Array.from({ length: 12 }, (_, index) => index + 1))
    for (const metrics of history) {
      expect(Number.isFinite(metrics.loss)).toBe(true)
      expect(metrics.grad_norm).toBeGreaterThan(0)
      expect(metrics.targetMargin).toBe(0)
    }
    expect(evaluation).toBeUndefined() // no held-out pairs
    expect(end.loss).toBeLessThan(start.loss - 0.1)
    expect(end.accuracy).toBeGreaterThan(start.accuracy)
    trainer.dispose()
    expect(model.parameters().has(scoreWeightName)).toBe(false)
    expect(tf.memory().numTensors).toBe(before)
    model.dispose()
  })

  it("trains with ChARM's act-adaptive margin (probability ratio to the initial model) and an SFT term", async () => {
    const model = createTestModel(2)
    const before = tf.memory().numTensors
    const trainer = createRewardModelTrainer({
      model,
      tokenizer,
      maxLength: 48,
      pairs: toyPairs,
      batchSize: 4,
      optimizer: { learningRate: 1e-2 },
      loss: { margin: 'act-adaptive', sftCoefficient: 1 },
    })
    const history: { targetMargin: number; nll: number }[] = []
    for (let step = 0; step < 3; step++) history.push(await trainer.step())
    expect(history[0]!.targetMargin).toBeCloseTo(0, 5) // π_θ = π_ref before the first update
    expect(Math.abs(history[2]!.targetMargin)).toBeGreaterThan(1e-4)
    for (const metrics of history) expect(metrics.nll).toBeGreaterThan(0)
    trainer.dispose()
    expect(tf.memory().numTensors).toBe(before)
    model.dispose()
  })

  it('splits off a seeded held-out share, evaluates it (ties count one half) and writes the run directory', async () => {
    const model = createTestModel(3)
    const runDirectory = join(directory(), 'run')
    const config = { model, tokenizer, maxLength: 48, pairs: toyPairs, heldOut: { validationShare: 0.25 }, batchSize: 4, seed: 7, runDirectory }
    const trainer = createRewardModelTrainer(config)
    expect(trainer.heldOutPairs).toHaveLength(3)
    expect(trainer.trainPairs).toHaveLength(9)
    const { evaluation } = await trainer.run({ steps: 2, evaluateEvery: 1 })
    expect(evaluation?.pairs).toBe(3)
    expect(evaluation?.accuracy).toBeGreaterThanOrEqual(0)
    expect(evaluation?.accuracy).toBeLessThanOrEqual(1)
    const lines = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8')).trim().split('\n')
    expect(lines.map((line) => (JSON.parse(line) as { step: number }).step)).toEqual([1, 2])
    expect(JSON.parse(lines[1]!)['eval/accuracy']).toBe(evaluation?.accuracy)
    expect(JSON.parse(await readFile(join(runDirectory, 'model', 'config.json'), 'utf8'))).toHaveProperty('vocab_size', 259)
    trainer.dispose()
    // The same seed splits the same way; a tied pair counts one half.
    const again = createRewardModelTrainer(config)
    expect(again.heldOutPairs).toEqual(trainer.heldOutPairs)
    const tie = again.rewardModel.encodePreferencePair({ prompt: 'Q ', chosen: 'same', rejected: 'same' })
    expect((await again.evaluate([tie])).accuracy).toBe(0.5)
    again.dispose()
    model.dispose()
  })

  it('reads its pairs with readPreferencePairs, naming a bad line', async () => {
    const path = join(directory(), 'preferences.jsonl')
    await writeFile(path, `${JSON.stringify(toyPairs[0])}\n${JSON.stringify({ chosen: 'a' })}\n`)
    await expect(readPreferencePairs(path)).rejects.toThrow(/preferences.jsonl at .*line 2.*rejected/)
    await writeFile(path, `${toyPairs.map((pair) => JSON.stringify(pair)).join('\n')}\n`)
    expect(await readPreferencePairs(path)).toEqual(toyPairs)
  })

  it('rejects a bad config, naming the field', () => {
    const model = createTestModel(4)
    const base = { model, tokenizer, maxLength: 48, pairs: toyPairs }
    expect(() => createRewardModelTrainer({ ...base, batchSize: 0 })).toThrow(/config.batchSize/)
    expect(() => createRewardModelTrainer({ ...base, pairs: [] })).toThrow(/config.pairs/)
    expect(() => createRewardModelTrainer({ ...base, heldOut: { validationShare: 1 } })).toThrow(/config.heldOut/)
    expect(() => createRewardModelTrainer({ ...base, pairs: [{ chosen: 'a' } as never] })).toThrow(/config.pairs.0.rejected/)
    expect(() => createRewardModelTrainer({ ...base, loss: { margin: 'from-data' } })).toThrow(/config.loss.margin/)
    expect(() => createRewardModelTrainer({ ...base, loss: { margin: 'sometimes' as 'none' } })).toThrow(/config.loss.margin/)
    expect(() => createRewardModelTrainer({ ...base, maxLength: 8 })).toThrow(/config.pairs\[0\].chosen/)
    expect(model.parameters().has(scoreWeightName)).toBe(false) // a failed config leaves no reward head behind
    model.dispose()
  })
})

describe('createRewardModelTrainer checkpoints', () => {
  it('killed after a checkpoint, resumes to the same total with the same weights, reward head and metrics, bit for bit', async () => {
    await expectResumeBitForBit({
      seed: 5,
      directory: join(directory(), 'resume'),
      make: (model, runDirectory, resume) =>
        createRewardModelTrainer({
          model,
          tokenizer,
          maxLength: 48,
          pairs: toyPairs.slice(0, 7),
          heldOut: toyPairs.slice(7),
          batchSize: 3,
          evaluateEvery: 2,
          loss: { margin: 'act-adaptive', actAdaptive: { variant: 'probability-ratio' } },
          optimizer: { learningRate: 1e-2 },
          runDirectory,
          checkpointEvery: 2,
          resume,
        }),
    })
  })
})
