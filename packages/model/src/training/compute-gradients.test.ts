import * as tf from '@tensorflow/tfjs-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { gradientPaths, maskedMean } from '@ludic/tensors'
import { applyLora } from '../lora/apply-lora.js'
import { createModel } from '../model/create-model.js'
import { sequenceLogprobs } from '../sequence-logprobs.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { computeGradients } from './compute-gradients.js'

beforeAll(initTestBackend)

/** A 2-layer Qwen3 with LoRA on q and v, and a response-scoring loss over a padded batch. */
function loraStep() {
  const model = createModel(
    {
      model_type: 'qwen3',
      vocab_size: 37,
      hidden_size: 16,
      intermediate_size: 24,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: 4,
      tie_word_embeddings: true,
      initializer_range: 0.3,
    },
    { seed: 3 },
  )
  const lora = applyLora(model, { rank: 2, alpha: 4, seed: 5 })
  // B starts at zero; make it nonzero so A gets a gradient too.
  for (const [name, variable] of lora.parameters()) if (name.includes('lora_B')) variable.assign(tf.randomNormal(variable.shape, 0, 0.5, 'float32', 7))
  const sequences = {
    promptIds: [
      [1, 2, 3],
      [4, 5],
      [6, 7, 8, 9],
    ],
    responseIds: [[10, 11], [12, 13, 14], [15]],
  }
  const loss = () =>
    tf.tidy(() => {
      const { logprobs, entropies, responseMask } = sequenceLogprobs(model, sequences, { withEntropy: true })
      return tf.sub(tf.neg(maskedMean(logprobs, responseMask)), tf.mul(0.1, maskedMean(entropies!, responseMask))) as tf.Scalar
    })
  return { model, parameters: model.trainableParameters(), loss }
}

describe('computeGradients', () => {
  it('keys the gradients by the parameters’ own names and frees everything else', () => {
    const parameters = new Map<string, tf.Variable>([
      [
        'model.layers.0.weight',
        tf.variable(
          tf.tensor2d([
            [1, 2],
            [3, 4],
          ]),
        ),
      ],
      ['model.layers.0.bias', tf.variable(tf.tensor1d([0.5, -0.5]))],
    ])
    const x = tf.tensor2d([[1, -1]])
    const before = tf.memory().numTensors
    const { loss, gradients } = computeGradients(
      () => tf.sum(tf.square(tf.add(tf.matMul(x, parameters.get('model.layers.0.weight')!), parameters.get('model.layers.0.bias')!))) as tf.Scalar,
      parameters,
    )
    // y = x·W + b = [-1.5, -2.5]; loss = Σ y² = 8.5; dL/dW = xᵀ·2y, dL/db = 2y
    expect(loss.dataSync()[0]).toBeCloseTo(8.5, 6)
    expect([...gradients.keys()]).toEqual(['model.layers.0.weight', 'model.layers.0.bias'])
    expect(Array.from(gradients.get('model.layers.0.weight')!.dataSync())).toEqual([-3, -5, 3, 5])
    expect(Array.from(gradients.get('model.layers.0.bias')!.dataSync())).toEqual([-3, -5])
    tf.dispose([loss, ...gradients.values()])
    expect(tf.memory().numTensors).toBe(before)
    tf.dispose([x, ...parameters.values()])
  })

  it('takes the fast path (the tape walked in @ludic/tensors, freeing as it goes), with recomputed layers too, never tfjs’s own', () => {
    const { model, parameters } = loraStep()
    const sequences = { promptIds: [[1, 2, 3]], responseIds: [[4, 5]] }
    for (const recomputeLayers of [false, true]) {
      const before = gradientPaths()
      const { loss, gradients } = computeGradients(
        () => tf.tidy(() => tf.neg(tf.sum(sequenceLogprobs(model, sequences, { training: true, recomputeLayers }).logprobs)) as tf.Scalar),
        parameters,
      )
      const after = gradientPaths()
      // One tape for the step, plus one per recomputed layer's backward pass (run from the step's own walk, not inside a recording).
      expect(after.tape - before.tape).toBe(recomputeLayers ? 1 + model.config.numHiddenLayers : 1)
      expect(after.nested - before.nested).toBe(0)
      tf.dispose([loss, ...gradients.values()])
    }
    model.dispose()
  })

  it('gives tf.variableGrads’s gradients for a LoRA step, leaking nothing', async () => {
    const { model, parameters, loss } = loraStep()
    const before = tf.memory().numTensors
    const reference = await tf.profile(() => {
      const { value, grads } = tf.variableGrads(loss, [...parameters.values()])
      return [value, ...[...parameters.values()].map((variable) => grads[variable.name]!)]
    })
    const referenceResult = reference.result as tf.Tensor[] // tf.profile reuses its result object: read it before the next profile
    const frugal = await tf.profile(() => {
      const { loss: value, gradients } = computeGradients(loss, parameters)
      return [value, ...gradients.values()]
    })
    const [referenceLoss, ...referenceGradients] = referenceResult
    const [frugalLoss, ...frugalGradients] = frugal.result as tf.Tensor[]
    expect(frugalLoss!.dataSync()[0]).toBe(referenceLoss!.dataSync()[0])
    expect(frugalGradients).toHaveLength(parameters.size)
    frugalGradients.forEach((gradient, index) => {
      const expected = referenceGradients[index]!
      expect(gradient.shape).toEqual(expected.shape)
      const scale = Math.max(...Array.from(expected.dataSync(), Math.abs))
      expect(scale).toBeGreaterThan(0)
      const values = gradient.dataSync()
      expected.dataSync().forEach((value, element) => expect(Math.abs(values[element]! - value)).toBeLessThanOrEqual(1e-6 * scale))
    })
    tf.dispose([...referenceResult, ...(frugal.result as tf.Tensor[])])
    expect(tf.memory().numTensors).toBe(before)
    model.dispose()
  })

  it('frees activations and their gradients during the backward pass: a deep chain peaks far below tfjs', async () => {
    const weight = tf.variable(tf.randomNormal([64, 64], 0, 0.1, 'float32', 1))
    const input = tf.randomNormal([32, 64], 0, 1, 'float32', 2)
    const parameters = new Map([['weight', weight]])
    // 24 steps of tanh(x·W), each in its own scope (as the model's layers), so the forward pass keeps what the tape saved only.
    const loss = () => {
      let x: tf.Tensor = input
      for (let step = 0; step < 24; step++) {
        const previous = x
        x = tf.tidy(() => tf.tanh(tf.matMul(previous, weight)))
      }
      return tf.sum(tf.square(x)) as tf.Scalar
    }
    const before = tf.memory().numTensors
    const reference = await tf.profile(() => {
      const { value, grads } = tf.variableGrads(loss, [weight])
      return [value, grads[weight.name]!]
    })
    const referencePeak = reference.peakBytes // tf.profile reuses its result object: read it before the next profile
    const referenceResult = reference.result as tf.Tensor[]
    const frugal = await tf.profile(() => {
      const { loss: value, gradients } = computeGradients(loss, parameters)
      return [value, gradients.get('weight')!]
    })
    const [, expected] = referenceResult
    const [, actual] = frugal.result as tf.Tensor[]
    const scale = Math.max(...Array.from(expected!.dataSync(), Math.abs))
    const values = actual!.dataSync()
    expected!.dataSync().forEach((value, element) => expect(Math.abs(values[element]! - value)).toBeLessThanOrEqual(1e-6 * scale))
    // Each step saves its input and output (32·64 floats); tfjs also keeps every step's gradient until the end.
    const activations = 24 * 2 * 32 * 64 * 4
    expect(referencePeak - frugal.peakBytes).toBeGreaterThan(activations / 2)
    tf.dispose([...referenceResult, ...(frugal.result as tf.Tensor[])])
    expect(tf.memory().numTensors).toBe(before)
    tf.dispose([weight, input])
  })

  it('refuses frozen parameters and a loss that is not a scalar, leaking nothing', () => {
    const { model, parameters, loss } = loraStep()
    const before = tf.memory().numTensors
    expect(() => computeGradients(loss, model.parameters())).toThrow(/model\.embed_tokens\.weight.*frozen/)
    expect(() => computeGradients(() => tf.tidy(() => tf.stack([loss(), loss()])) as unknown as tf.Scalar, parameters)).toThrow(/must return a scalar/)
    expect(tf.memory().numTensors).toBe(before)
    model.dispose()
  })

  it('names the parameters the loss does not depend on, and leaks nothing then either', () => {
    const used = tf.variable(tf.tensor1d([1, 2]))
    const unused = tf.variable(tf.tensor1d([3]))
    const before = tf.memory().numTensors
    expect(() =>
      computeGradients(
        () => tf.sum(used) as tf.Scalar,
        new Map([
          ['used', used],
          ['lm_head.weight', unused],
        ]),
      ),
    ).toThrow(/the loss does not depend on lm_head\.weight/)
    expect(tf.memory().numTensors).toBe(before)
    expect(() => computeGradients(() => tf.sum(used) as tf.Scalar, new Map())).toThrow(/'parameters'/)
    tf.dispose([used, unused])
  })
})
