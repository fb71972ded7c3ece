import { describe, expect, it } from 'vitest'
import { createSftTrainer } from './sft-trainer.js'
import { expectResumeBitForBit } from './test/resume.js'
import { createTestModel, tokenizer, useBackendAndDirectory } from './test/support.js'

const directory = useBackendAndDirectory('ludic-sft-')

// Five examples in batches of three: the order runs across epochs, so the position in it must survive a kill.
const examples = ['a', 'b', 'c', 'd', 'e'].map((letter) => ({ prompt: `say ${letter}:`, response: ` ${letter}${letter}` }))

describe('createSftTrainer', () => {
  it('run({ steps }) is the total to reach: a trainer killed after a checkpoint resumes to the same weights and metrics, bit for bit', async () => {
    await expectResumeBitForBit({
      seed: 1,
      directory: directory(),
      make: (model, runDirectory, resume) =>
        createSftTrainer({ model, tokenizer, examples, batchSize: 3, optimizer: { learningRate: 1e-2 }, runDirectory, checkpointEvery: 2, resume }),
    })
  })

  it('takes only the steps left to the total, and refuses checkpoints without a run directory', async () => {
    const model = createTestModel(2)
    const trainer = createSftTrainer({ model, tokenizer, examples, batchSize: 2 })
    expect(await trainer.step()).toMatchObject({ step: 1 })
    expect((await trainer.run({ steps: 3 })).map((metrics) => metrics.step)).toEqual([2, 3])
    expect(await trainer.run({ steps: 2 })).toEqual([])
    expect(trainer.history.map((metrics) => metrics.step)).toEqual([1, 2, 3])
    await expect(trainer.run({ steps: -1 })).rejects.toThrow(/options\.steps/)
    trainer.dispose()
    expect(() => createSftTrainer({ model, tokenizer, examples, checkpointEvery: 2 })).toThrow(/config\.runDirectory.*checkpointEvery/)
    expect(() => createSftTrainer({ model, tokenizer, examples, resume: true })).toThrow(/config\.runDirectory.*resume/)
    model.dispose()
  })
})
