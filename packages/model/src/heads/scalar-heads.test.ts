import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expectNoLeaks } from '@ludic/tensors/test'
import { createModel } from '../model/create-model.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { createRewardHead, createValueHead } from './scalar-heads.js'
import { saveModel } from '../checkpoint/save-model.js'
import { loadModel } from '../checkpoint/load-model.js'
import { openSafetensors } from '@ludic/tensors'

beforeAll(initTestBackend)
let directory: string
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ludic-heads-'))
})
afterAll(() => rm(directory, { recursive: true, force: true, maxRetries: 5 }))

describe('value and reward heads', () => {
  it('a value head gives one value per token, trains, and is a model parameter named score.weight', async () => {
    const model = createModel('tiny', { vocabSize: 30, seed: 1, overrides: { numHiddenLayers: 1 } })
    const head = createValueHead(model, { seed: 2 })
    expect(model.parameters().get('score.weight')).toBe(head.weight)
    expect(head.weight.shape).toEqual([1, 128])
    const values = head.values([
      [1, 2, 3],
      [4, 5, 6],
    ])
    expect(values.shape).toEqual([2, 3])
    values.dispose()
    // Regress the values of one sequence to fixed targets.
    const targets = tf.tensor2d([[0.5, -1, 2]])
    const optimizer = tf.train.adam(3e-2)
    const loss = () => tf.mean(tf.square(tf.sub(head.values([[1, 2, 3]]), targets))) as tf.Scalar
    for (let step = 0; step < 120; step++) tf.dispose(optimizer.minimize(loss, true, [...model.trainableParameters().values()]) ?? [])
    const final = loss()
    expect(final.dataSync()[0]).toBeLessThan(0.02)
    final.dispose()
    await expectNoLeaks(() => head.values([[1, 2]]), { label: 'values' })
    await saveModel(model, join(directory, 'critic'))
    const file = await openSafetensors(join(directory, 'critic', 'model.safetensors'))
    expect(file.info('score.weight').shape).toEqual([1, 128])
    await file.close()
    const loaded = await loadModel(join(directory, 'critic'))
    const reloadedHead = createValueHead(loaded)
    expect(Array.from(reloadedHead.weight.dataSync())).toEqual(Array.from(head.weight.dataSync()))
    loaded.dispose()
    head.dispose()
    expect(model.parameters().has('score.weight')).toBe(false)
    tf.dispose([targets])
    optimizer.dispose()
    model.dispose()
  })

  it('a reward head reads each row at its last attended token', () => {
    const model = createModel('tiny', { vocabSize: 30, seed: 1, overrides: { numHiddenLayers: 1 } })
    const head = createRewardHead(model, { seed: 3 })
    const rewards = head.rewards(
      [
        [0, 0, 7, 8],
        [5, 6, 7, 8],
      ],
      {
        attentionMask: [
          [0, 0, 1, 1],
          [1, 1, 1, 1],
        ],
      },
    )
    const alone = head.rewards([[7, 8]])
    expect(rewards.shape).toEqual([2])
    expect(rewards.dataSync()[0]).toBeCloseTo(alone.dataSync()[0]!, 5)
    expect(() => head.rewards([[1, 2]], { attentionMask: [[0, 0]] })).toThrow(/attentionMask\[0\]/)
    tf.dispose([rewards, alone])
    model.dispose()
  })
})
