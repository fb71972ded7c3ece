import * as tf from '@tensorflow/tfjs-core'
import { createRandom } from '@ludic/core'
import { expectNoLeaks } from '@ludic/tensors/test'
import { beforeAll, describe, expect, it } from 'vitest'
import { createModel } from './model/create-model.js'
import { generate } from './generation/generate.js'
import type { CausalLanguageModel } from './model/causal-language-model.js'
import { sequenceLogprobs } from './sequence-logprobs.js'
import { initTestBackend } from './test/init-test-backend.js'

beforeAll(initTestBackend)

const promptIds = [[3, 7, 1], [9], [4, 4, 2, 8, 6]]
const responseIds = [[5, 2], [10, 0, 3, 7], [1]]

function tinyQwen3(seed: number): CausalLanguageModel {
  return createModel(
    {
      model_type: 'qwen3',
      vocab_size: 11,
      hidden_size: 8,
      intermediate_size: 12,
      num_hidden_layers: 2,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      head_dim: 4,
      attention_bias: true,
      initializer_range: 0.5,
    },
    { seed },
  )
}

describe('sequenceLogprobs', () => {
  it('gives log p(response token | everything before it), zero at padding', () => {
    const model = tinyQwen3(1)
    const { logprobs, responseMask } = sequenceLogprobs(model, { promptIds, responseIds })
    expect(logprobs.shape).toEqual([3, 4])
    expect(responseMask.arraySync()).toEqual([
      [1, 1, 0, 0],
      [1, 1, 1, 1],
      [1, 0, 0, 0],
    ])
    const values = logprobs.arraySync()
    promptIds.forEach((prompt, row) => {
      const sequence = [...prompt, ...responseIds[row]!]
      const logits = model.forward([sequence])
      const logSoftmax = tf.logSoftmax(logits).arraySync() as number[][][]
      responseIds[row]!.forEach((token, step) => expect(values[row]![step]).toBeCloseTo(logSoftmax[0]![prompt.length - 1 + step]![token]!, 5))
      tf.dispose(logits)
    })
    expect(Math.abs(values[0]![2]!)).toBe(0)
    tf.dispose([logprobs, responseMask])
    model.dispose()
  })

  it('accepts the same batch padded (verl layout) and gives entropies', () => {
    const model = tinyQwen3(2)
    const ragged = sequenceLogprobs(model, { promptIds, responseIds }, { withEntropy: true })
    const inputIds = [
      [0, 0, 3, 7, 1, 5, 2, 0, 0],
      [0, 0, 0, 0, 9, 10, 0, 3, 7],
      [4, 4, 2, 8, 6, 1, 0, 0, 0],
    ]
    const attentionMask = [
      [0, 0, 1, 1, 1, 1, 1, 0, 0],
      [0, 0, 0, 0, 1, 1, 1, 1, 1],
      [1, 1, 1, 1, 1, 1, 0, 0, 0],
    ]
    const padded = sequenceLogprobs(model, { inputIds, attentionMask, responseLength: 4 }, { withEntropy: true })
    expect(tf.max(tf.abs(tf.sub(ragged.logprobs, padded.logprobs))).dataSync()[0]).toBeLessThan(1e-5)
    const entropies = padded.entropies!.arraySync()
    expect(entropies[1]![3]).toBeGreaterThan(0)
    expect(entropies[1]![3]).toBeLessThanOrEqual(Math.log(11) + 1e-5)
    expect(entropies[2]![1]).toBe(0)
    tf.dispose([ragged, padded] as unknown as tf.TensorContainer)
    expect(() => sequenceLogprobs(model, { inputIds, attentionMask, responseLength: 9 })).toThrow(/sequences\.responseLength/)
    expect(() => sequenceLogprobs(model, { promptIds: [[1]], responseIds: [[1], [2]] })).toThrow(/sequences\.responseIds/)
    model.dispose()
  })

  it.each(['qwen3', 'gpt2'])('has the gradient of finite differences (every kind of %s parameter)', (architecture) => {
    const model =
      architecture === 'qwen3'
        ? tinyQwen3(3)
        : createModel(
            { model_type: 'gpt2', vocab_size: 11, n_embd: 8, n_inner: 12, n_layer: 2, n_head: 2, n_positions: 8, initializer_range: 0.5 },
            { seed: 3 },
          )
    const weights = tf.tensor2d([
      [0.3, -1.2, 0, 0],
      [0.7, 0.2, -0.5, 1.1],
      [-0.9, 0, 0, 0],
    ])
    const loss = (): tf.Scalar =>
      tf.tidy(() => {
        const { logprobs, entropies } = sequenceLogprobs(model, { promptIds, responseIds }, { withEntropy: true })
        return tf.add(tf.sum(tf.mul(logprobs, weights)), tf.mul(tf.sum(entropies!), 0.1)) as tf.Scalar
      })
    const parameters = model.parameters()
    const { grads } = tf.variableGrads(loss, [...parameters.values()])
    const random = createRandom(4)
    const epsilon = 1e-2
    let checked = 0
    for (const [name, variable] of parameters) {
      const analytic = grads[variable.name]!.dataSync()
      const values = variable.dataSync().slice()
      for (let sample = 0; sample < 3; sample++) {
        const index = random.nextInt(values.length)
        const original = values[index]!
        const evaluate = (value: number): number => {
          values[index] = value
          variable.assign(tf.tensor(values, variable.shape))
          const result = loss()
          const number = result.dataSync()[0]!
          result.dispose()
          return number
        }
        const numeric = (evaluate(original + epsilon) - evaluate(original - epsilon)) / (2 * epsilon)
        evaluate(original)
        expect(Math.abs(numeric - analytic[index]!), `${name}[${index}]: analytic ${analytic[index]}, numeric ${numeric}`).toBeLessThan(
          2e-3 + 2e-2 * Math.abs(numeric),
        )
        checked++
      }
    }
    expect(checked).toBe(parameters.size * 3)
    tf.dispose(Object.values(grads))
    weights.dispose()
    model.dispose()
  })

  it('trains: a tiny model memorises a short text with Adam, and a step leaves numTensors unchanged', async () => {
    const text = 'ludic plays to learn.'
    const ids = Array.from(new TextEncoder().encode(text))
    const model = createModel('tiny', { vocabSize: 128, seed: 5, overrides: { hiddenSize: 32, intermediateSize: 64, numAttentionHeads: 2 } })
    const optimizer = tf.train.adam(1e-2)
    const variables = [...model.trainableParameters().values()]
    const step = (): tf.Scalar | null =>
      optimizer.minimize(
        () => {
          const { logprobs, responseMask } = sequenceLogprobs(model, { promptIds: [ids.slice(0, 1)], responseIds: [ids.slice(1)] })
          return tf.neg(tf.div(tf.sum(logprobs), tf.sum(responseMask))) as tf.Scalar
        },
        true,
        variables,
      )
    let loss = Infinity
    for (let iteration = 0; iteration < 150; iteration++) {
      const value = step()!
      loss = value.dataSync()[0]!
      value.dispose()
    }
    expect(loss).toBeLessThan(0.05)
    await expectNoLeaks(step, { label: 'a training step' })
    const [result] = await generate(model, { inputIds: [ids.slice(0, 1)], maxNewTokens: ids.length - 1, temperature: 0, stopTokenIds: [] })
    expect(new TextDecoder().decode(Uint8Array.from([ids[0]!, ...result!.tokenIds]))).toBe(text)
    optimizer.dispose()
    model.dispose()
  })
})
