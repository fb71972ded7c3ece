import * as tf from '@tensorflow/tfjs-core'
import { expectNoLeaks } from '@ludic/tensors/test'
import { beforeAll, describe, expect, it } from 'vitest'
import { initTestBackend } from '../test/init-test-backend.js'
import { applyLora } from '../lora/apply-lora.js'
import type { CausalLanguageModel } from './causal-language-model.js'
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

  const rows = [Int32Array.from({ length: 20 }, (_, index) => (index * 7) % 40), Int32Array.from({ length: 20 }, (_, index) => (index * 11 + 3) % 40)]
  /** Concatenations of weights of these shapes in one training forward and backward (a fused q/k/v or gate/up makes one). */
  const concats = async (model: CausalLanguageModel, weightShapes: string[]) => {
    const profile = await tf.profile(() => {
      const { value, grads } = tf.variableGrads(() => tf.sum(model.forward(rows, { training: true })) as tf.Scalar, [...model.trainableParameters().values()])
      tf.dispose([value, ...Object.values(grads)])
    })
    return profile.kernels.filter((kernel) => kernel.name.startsWith('Concat') && weightShapes.includes(String(kernel.outputShapes[0]))).length
  }
  const fuses = () => tf.getBackend() !== 'wasm'

  it('are not fused in training when every weight is frozen (LoRA elsewhere): the tape would keep the concatenated copy', async () => {
    const model = createModel('tiny', { vocabSize: 40, seed: 5, overrides: { numHiddenLayers: 2 } })
    const weightShapes = ['384,128', '768,128'] // [q; k; v] and [gate; up] of tiny
    try {
      // All trainable: q/k/v and gate/up fused in both layers (each concatenates its weights).
      expect(await concats(model, weightShapes)).toBe(fuses() ? 4 : 0)
      // LoRA on q and v, the base frozen: neither is fused (q/v have adapters; gate/up are frozen).
      const adapters = applyLora(model, { rank: 2, targetModules: ['q_proj', 'v_proj'] })
      expect(await concats(model, weightShapes)).toBe(0)
      adapters.remove()
      expect(await concats(model, weightShapes)).toBe(fuses() ? 4 : 0)
    } finally {
      model.dispose()
    }
  })

  it('are fused for weights of at most 2^19 floats together: gate/up of 2 × 2048 × 128 are, of 2 × 2052 × 128 are not', async () => {
    // q/k/v (3 × 128 × 128 floats) stay fused in both; gate/up cross the limit (524,288 against 525,312 floats).
    for (const [intermediateSize, gateUpFused] of [
      [2048, true],
      [2052, false],
    ] as const) {
      const model = createModel('tiny', { vocabSize: 40, seed: 5, overrides: { numHiddenLayers: 1, intermediateSize } })
      try {
        expect(await concats(model, ['384,128']), `q/k/v, intermediate ${intermediateSize}`).toBe(fuses() ? 1 : 0)
        expect(await concats(model, [`${2 * intermediateSize},128`]), `gate/up, intermediate ${intermediateSize}`).toBe(fuses() && gateUpFused ? 1 : 0)
      } finally {
        model.dispose()
      }
    }
  })
})
