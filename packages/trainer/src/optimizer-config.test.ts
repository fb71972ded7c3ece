import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { optimizerConfigSchema } from './optimizer-config.js'
import { createSftTrainer } from './sft-trainer.js'
import { createTestModel, useBackendAndDirectory } from './test/support.js'

useBackendAndDirectory('ludic-optimizer-config-')

describe('optimizer config', () => {
  const examples = [{ promptIds: Int32Array.from([1, 2, 3]), responseIds: Int32Array.from([4, 5]) }]

  it("leaves fused to createAdamW's default, and passes it through: fused: true is refused on WebAssembly naming options.fused", async () => {
    expect(optimizerConfigSchema.parse({}).fused).toBeUndefined()
    const model = createTestModel(0)
    expect(() => createSftTrainer({ model, examples, batchSize: 1, optimizer: { fused: true } })).toThrow(InvalidArgumentError)
    expect(() => createSftTrainer({ model, examples, batchSize: 1, optimizer: { fused: true } })).toThrow(/'options\.fused' \(value: true\)/)
    const composed = createSftTrainer({ model, examples, batchSize: 1, optimizer: { fused: false, learningRate: 1e-2 } })
    const [metrics] = await composed.run({ steps: 1 })
    expect(Number.isFinite(metrics!.loss)).toBe(true)
    composed.dispose()
    model.dispose()
  })
})
