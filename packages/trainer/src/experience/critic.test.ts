import { readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { advantageEstimators } from '@ludic/advantages'
import { applyLora, type CausalLanguageModel } from '@ludic/model'
import { describe, expect, it } from 'vitest'
import { createRlTrainer } from '../rl-trainer.js'
import type { RlTrainerConfig } from '../rl-config.js'
import { ResumeError } from '../run-state.js'
import { createPickEnvironment, createTestModel, tokenizer, useBackendAndDirectory } from '../test/support.js'

const temporaryDirectory = useBackendAndDirectory('ludic-critic-')

/** GAE with a critic on the two-player pick game. */
const ppoConfig = (model: CausalLanguageModel, critic: RlTrainerConfig['critic'], extra: Partial<RlTrainerConfig> = {}): RlTrainerConfig => ({
  model,
  tokenizer,
  environments: [() => createPickEnvironment(['player0', 'player1'])],
  advantage: advantageEstimators.create('gae', { gamma: 1, lambda: 0.95 }),
  critic,
  optimizer: { learningRate: 5e-3 },
  batch: { episodesPerStep: 8, groupSize: 1, maxTokens: 1, miniBatchSize: 16, ppoEpochs: 2 },
  seed: 3,
  ...extra,
})

describe('PPO with a critic (GAE)', () => {
  for (const kind of ['separate', 'shared'] as const) {
    it(`trains a ${kind} critic: the value loss falls, every metric finite, no tensor left behind`, async () => {
      const model = createTestModel(5)
      const trainer = createRlTrainer(ppoConfig(model, { model: kind, ...(kind === 'separate' ? { optimizer: { learningRate: 1e-2 } } : {}) }))
      const history = await trainer.run({ steps: 12 })
      for (const metrics of history) for (const [name, value] of Object.entries(metrics)) expect(Number.isFinite(value), name).toBe(true)
      const early = (history[0]!.valueLoss! + history[1]!.valueLoss!) / 2
      const late = (history.at(-1)!.valueLoss! + history.at(-2)!.valueLoss!) / 2
      expect(late).toBeLessThan(early)
      const tensors = tf.memory().numTensors
      await trainer.step()
      expect(tf.memory().numTensors).toBe(tensors)
      trainer.dispose()
      model.dispose()
    })
  }

  it('a separate critic under LoRA: the adapters and the critic train, the base stays', async () => {
    const model = createTestModel(6)
    applyLora(model, { rank: 2, targetModules: 'all-linear' })
    const base = model.parameters().get('model.layers.0.mlp.down_proj.weight')!.dataSync().slice()
    const trainer = createRlTrainer(ppoConfig(model, { model: 'separate' }))
    const metrics = await trainer.step()
    expect(Number.isFinite(metrics.valueLoss)).toBe(true)
    expect(model.parameters().get('model.layers.0.mlp.down_proj.weight')!.dataSync()).toEqual(base)
    trainer.dispose()
    model.dispose()
  })

  it('resumes bit for bit: the critic and its optimizer are part of the checkpoint', async () => {
    const directory = join(temporaryDirectory(), 'resume')
    const straight = createTestModel(7)
    const uninterrupted = createRlTrainer(ppoConfig(straight, { model: 'separate' }))
    const expected = await uninterrupted.run({ steps: 4 })
    uninterrupted.dispose()
    const first = createTestModel(7)
    const before = createRlTrainer(ppoConfig(first, { model: 'separate' }, { runDirectory: directory, checkpointEvery: 2 }))
    await before.run({ steps: 2 })
    before.dispose()
    expect(await readdir(join(directory, 'critic'))).toContain('checkpoint-2')
    const second = createTestModel(99) // other weights: the checkpoint must restore them, the critic's too
    const after = createRlTrainer(ppoConfig(second, { model: 'separate' }, { runDirectory: directory, checkpointEvery: 2, resume: true }))
    const resumed = await after.run({ steps: 4 })
    // Timings and the live tensor bytes depend on what else the process holds (here three models), not on the run.
    const timing = (metrics: Record<string, number>) =>
      Object.fromEntries(Object.entries(metrics).filter(([name]) => !/Seconds$|tokensPerSecond|forwardTensorBytes/.test(name)))
    expect(resumed.map(timing)).toEqual(expected.slice(2).map(timing))
    after.dispose()
    for (const model of [straight, first, second]) model.dispose()
  })

  it("refuses to resume when the critic's checkpoint is missing, naming it", async () => {
    const directory = join(temporaryDirectory(), 'critic-missing')
    const model = createTestModel(8)
    const trainer = createRlTrainer(ppoConfig(model, { model: 'separate' }, { runDirectory: directory, checkpointEvery: 1 }))
    await trainer.run({ steps: 1 })
    trainer.dispose()
    await rm(join(directory, 'critic'), { recursive: true })
    const again = createRlTrainer(ppoConfig(model, { model: 'separate' }, { runDirectory: directory, checkpointEvery: 1, resume: true }))
    const error = await again.step().catch((caught: unknown) => caught)
    expect(ResumeError.isInstance(error)).toBe(true)
    expect((error as ResumeError).reason).toBe('critic-missing')
    again.dispose()
    model.dispose()
  })

  it('GAE without a critic is refused when the trainer is built, naming config.critic', () => {
    const model = createTestModel(1)
    expect(() => createRlTrainer({ ...ppoConfig(model, undefined), critic: undefined })).toThrow(/config\.advantage.*"gae".*config\.critic/)
    model.dispose()
  })
})
