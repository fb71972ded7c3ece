import * as tf from '@tensorflow/tfjs-core'
import { expectNoLeaks } from '@ludic/tensors/test'
import { beforeAll, describe, expect, it } from 'vitest'
import { initTestBackend } from '../test/init-test-backend.js'
import { createModel } from './create-model.js'

beforeAll(initTestBackend)

// From 32 rows (batch · time) up, q/k/v and gate/up are projected with one matmul over concatenated weights
// (on backends other than WebAssembly); below, one by one. A batch of 2 × 20 tokens takes the first path, each
// row alone the second: both must give the same logits and gradients.
describe('fused projections', () => {
  const configurations = {
    'grouped-query attention': { numKeyValueHeads: 2 },
    'Qwen3-style q/k norms with q/k/v biases': { queryKeyNorm: true, attentionBias: true },
  }
  for (const [label, overrides] of Object.entries(configurations)) {
    it(`${label}: a 40-row batch equals its rows one by one, values and gradients`, async () => {
      const model = createModel('tiny', { vocabSize: 40, seed: 5, overrides: { numHiddenLayers: 1, initializerRange: 0.2, ...overrides } })
      try {
        const rows = [Int32Array.from({ length: 20 }, (_, index) => (index * 7) % 40), Int32Array.from({ length: 20 }, (_, index) => (index * 11 + 3) % 40)]
        const parameters = [...model.trainableParameters().values()]
        await expectNoLeaks(() =>
          tf.tidy(() => {
            const upstream = tf.randomNormal([2, 20, 40], 0, 1, 'float32', 9)
            const batched = () => tf.sum(tf.mul(model.forward(rows), upstream)) as tf.Scalar
            const oneByOne = () =>
              tf.addN(rows.map((row, index) => tf.sum(tf.mul(model.forward([row]), tf.slice(upstream, [index, 0, 0], [1, -1, -1]))))) as tf.Scalar
            const together = tf.variableGrads(batched, parameters)
            const separately = tf.variableGrads(oneByOne, parameters)
            expect(Math.abs(together.value.dataSync()[0]! - separately.value.dataSync()[0]!)).toBeLessThan(1e-3)
            for (const [name, gradient] of Object.entries(together.grads)) {
              const expected = separately.grads[name]!
              const scale = tf.max(tf.abs(expected)).dataSync()[0]!
              expect(tf.max(tf.abs(tf.sub(gradient, expected))).dataSync()[0]!, name).toBeLessThan(1e-4 * Math.max(scale, 1))
            }
          }),
        )
      } finally {
        model.dispose()
      }
    })
  }
})
