import * as tf from '@tensorflow/tfjs-core'
import { maskedMean } from '@ludic/tensors'
import { beforeAll, describe, expect, it } from 'vitest'
import { applyLora } from '../lora/apply-lora.js'
import { createModel } from '../model/create-model.js'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { sequenceLogprobs } from '../sequence-logprobs.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { computeGradients } from './compute-gradients.js'
import { recomputed } from './recompute.js'

beforeAll(initTestBackend)

const sequences = {
  promptIds: [
    [1, 2, 3],
    [4, 5],
    [6, 7, 8, 9],
  ],
  responseIds: [[10, 11], [12, 13, 14], [15]],
}

function model(architecture: 'qwen3' | 'gpt2', seed: number): CausalLanguageModel {
  const common = { vocab_size: 17, initializer_range: 0.4 }
  return createModel(
    architecture === 'qwen3'
      ? {
          ...common,
          model_type: 'qwen3',
          hidden_size: 8,
          intermediate_size: 12,
          num_hidden_layers: 3,
          num_attention_heads: 2,
          num_key_value_heads: 1,
          head_dim: 4,
        }
      : { ...common, model_type: 'gpt2', n_embd: 8, n_layer: 3, n_head: 2, n_positions: 32 },
    { seed },
  )
}

/** The loss and gradients of a response-scoring step, with and without recomputed layers. */
function step(subject: CausalLanguageModel, recomputeLayers: boolean) {
  const { loss, gradients } = computeGradients(
    () =>
      tf.tidy(() => {
        const { logprobs, entropies, responseMask } = sequenceLogprobs(subject, sequences, { withEntropy: true, training: true, recomputeLayers })
        return tf.sub(tf.neg(maskedMean(logprobs, responseMask)), tf.mul(0.1, maskedMean(entropies!, responseMask))) as tf.Scalar
      }),
    subject.trainableParameters(),
  )
  const result = { loss: loss.dataSync()[0]!, gradients: new Map([...gradients].map(([name, gradient]) => [name, Array.from(gradient.dataSync())])) }
  tf.dispose([loss, ...gradients.values()])
  return result
}

describe('recomputed layers', () => {
  for (const [name, architecture, lora] of [
    ['qwen3 with LoRA', 'qwen3', true],
    ['qwen3, every parameter', 'qwen3', false],
    ['gpt2, every parameter', 'gpt2', false],
  ] as const) {
    it(`give the kept-activations gradients (${name}), leaking nothing`, () => {
      const subject = model(architecture, 2)
      if (lora) {
        const adapters = applyLora(subject, { rank: 2, alpha: 4 })
        for (const [parameter, variable] of adapters.parameters())
          if (parameter.includes('lora_B')) variable.assign(tf.randomNormal(variable.shape, 0, 0.5, 'float32', 4))
      }
      const kept = step(subject, false)
      const before = tf.memory().numTensors
      const again = step(subject, true)
      expect(tf.memory().numTensors).toBe(before)
      expect(again.loss).toBeCloseTo(kept.loss, 6)
      expect([...again.gradients.keys()]).toEqual([...kept.gradients.keys()])
      for (const [parameter, expected] of kept.gradients) {
        const actual = again.gradients.get(parameter)!
        const scale = Math.max(1e-4, ...expected.map(Math.abs))
        expected.forEach((value, index) => expect(Math.abs(actual[index]! - value), parameter).toBeLessThanOrEqual(1e-5 * scale))
      }
      subject.dispose()
    })
  }

  it('keeps less for the gradient: a deep chain recomputed peaks below the chain kept', async () => {
    const weight = tf.variable(tf.randomNormal([32, 32], 0, 0.2, 'float32', 1))
    const input = tf.randomNormal([16, 32], 0, 1, 'float32', 2)
    const block = ([x]: tf.Tensor[]) => tf.tidy(() => tf.tanh(tf.matMul(tf.tanh(tf.matMul(tf.tanh(tf.matMul(x!, weight)), weight)), weight)))
    const loss = (recompute: boolean) => () => {
      let x: tf.Tensor = input
      for (let index = 0; index < 8; index++) {
        const previous = x
        x = recompute ? recomputed(block, [previous], [weight]) : block([previous])
      }
      return tf.sum(tf.square(x)) as tf.Scalar
    }
    const parameters = new Map([['weight', weight]])
    const kept = await tf.profile(() => {
      const { loss: value, gradients } = computeGradients(loss(false), parameters)
      return [value, gradients.get('weight')!]
    })
    const keptPeak = kept.peakBytes // tf.profile reuses its result object
    const [keptLoss, keptGradient] = kept.result as tf.Tensor[]
    const again = await tf.profile(() => {
      const { loss: value, gradients } = computeGradients(loss(true), parameters)
      return [value, gradients.get('weight')!]
    })
    const [againLoss, againGradient] = again.result as tf.Tensor[]
    expect(againLoss!.dataSync()[0]).toBeCloseTo(keptLoss!.dataSync()[0]!, 5)
    const expected = keptGradient!.dataSync()
    const scale = Math.max(...Array.from(expected, Math.abs))
    againGradient!.dataSync().forEach((value, index) => expect(Math.abs(value - expected[index]!)).toBeLessThanOrEqual(1e-5 * scale))
    // Kept: 8 blocks × 3 matmuls save their inputs and 3 tanh their outputs (16·32 floats each); recomputed: 8 block inputs.
    expect(keptPeak - again.peakBytes).toBeGreaterThan(8 * 4 * 16 * 32 * 4)
    tf.dispose([keptLoss!, keptGradient!, againLoss!, againGradient!, weight, input])
  })

  it('are refused with a cache, and with adapter dropout in training mode', () => {
    const subject = model('qwen3', 1)
    const cache = subject.createCache()
    expect(() => subject.hiddenStates([[1, 2]], { cache, recomputeLayers: true })).toThrow(/recomputeLayers.*not with a cache/)
    cache.dispose()
    applyLora(subject, { rank: 2, dropout: 0.1 })
    expect(() => sequenceLogprobs(subject, sequences, { training: true, recomputeLayers: true })).toThrow(/recomputeLayers.*dropout/)
    subject.dispose()
  })
})
