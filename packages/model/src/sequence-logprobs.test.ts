import * as tf from '@tensorflow/tfjs-core'
import { createRandom, InvalidArgumentError } from '@ludic/core'
import { expectNoLeaks } from '@ludic/tensors/test'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { createModel } from './model/create-model.js'
import { generate } from './generation/generate.js'
import type { CausalLanguageModel } from './model/causal-language-model.js'
import { entropyFromLogits, tokenLogprobs } from '@ludic/tensors'
import { applyLora } from './lora/apply-lora.js'
import { createValueHead, type ValueHead } from './heads/scalar-heads.js'
import { sequenceLogprobs } from './sequence-logprobs.js'
import { initTestBackend } from './test/init-test-backend.js'
import { createTinyQwen3 } from './test/tiny-qwen3.js'

beforeAll(initTestBackend)

const promptIds = [[3, 7, 1], [9], [4, 4, 2, 8, 6]]
const responseIds = [[5, 2], [10, 0, 3, 7], [1]]

const tinyQwen3 = (seed: number): CausalLanguageModel => createTinyQwen3(seed, { attention_bias: true })

/** The batch above in verl's layout: prompts left-padded, responses right-padded, with its attention mask. */
function paddedBatch() {
  const responseLength = Math.max(...responseIds.map((ids) => ids.length))
  const promptLength = Math.max(...promptIds.map((ids) => ids.length))
  const inputIds = promptIds.map((prompt, row) => {
    const response = responseIds[row]!
    return [...Array(promptLength - prompt.length).fill(0), ...prompt, ...response, ...Array(responseLength - response.length).fill(0)]
  })
  const attentionMask = promptIds.map((prompt, row) => {
    const response = responseIds[row]!.length
    return [...Array(promptLength - prompt.length).fill(0), ...Array(prompt.length + response).fill(1), ...Array(responseLength - response).fill(0)]
  })
  return { responseLength, promptLength, inputIds, attentionMask }
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

  describe('scores the response in chunks of positions, equal to the whole logits', () => {
    /** Log-probs, entropies and their gradients from the whole `[batch, responseLength, vocab]` logits (the reference). */
    function wholeLogits(model: CausalLanguageModel, temperature = 1) {
      const { responseLength, promptLength, inputIds, attentionMask } = paddedBatch()
      const targets = tf.tensor2d(
        inputIds.map((ids) => ids.slice(promptLength)),
        [inputIds.length, responseLength],
        'int32',
      )
      const mask = tf.tensor2d(
        attentionMask.map((row) => row.slice(promptLength)),
        [inputIds.length, responseLength],
      )
      return () => {
        const hidden = model.hiddenStates(inputIds, { attentionMask })
        const raw = model.logitsFromHidden(tf.slice(hidden, [0, promptLength - 1, 0], [inputIds.length, responseLength, hidden.shape[2]]) as tf.Tensor3D)
        const logits = temperature === 1 ? raw : tf.div(raw, temperature) // the explicit tempered log-softmax, differentiated by tf
        return {
          logprobs: tf.mul(tokenLogprobs(logits, targets), mask),
          entropies: tf.mul(entropyFromLogits(logits), mask),
          dispose: () => tf.dispose([targets, mask]),
        }
      }
    }

    /** Values and gradients of Σ logprobs·w₁ + Σ entropies·w₂ with respect to the trainable parameters. */
    function valuesAndGradients(model: CausalLanguageModel, scores: () => { logprobs: tf.Tensor; entropies: tf.Tensor }) {
      const parameters = [...model.trainableParameters().values()]
      const weights = tf.randomNormal([3, 4], 0, 1, 'float32', 9)
      const { value, grads } = tf.variableGrads(() => {
        const { logprobs, entropies } = scores()
        return tf.add(tf.sum(tf.mul(logprobs, weights)), tf.sum(tf.mul(entropies, tf.reverse(weights)))) as tf.Scalar
      }, parameters)
      const result = tf.tidy(() => {
        const { logprobs, entropies } = scores()
        return { logprobs: logprobs.arraySync() as number[][], entropies: entropies.arraySync() as number[][] }
      })
      const gradients = parameters.map((parameter) => Array.from(grads[parameter.name]!.dataSync()))
      tf.dispose([weights, value, ...Object.values(grads)])
      return { ...result, gradients, names: parameters.map((parameter) => parameter.name) }
    }

    function expectClose(actual: ReturnType<typeof valuesAndGradients>, expected: ReturnType<typeof valuesAndGradients>) {
      const close = (a: number[], b: number[]) => {
        const scale = Math.max(1e-3, ...b.map(Math.abs))
        a.forEach((value, index) => expect(Math.abs(value - b[index]!)).toBeLessThanOrEqual(2e-5 * scale))
      }
      close(actual.logprobs.flat(), expected.logprobs.flat())
      close(actual.entropies.flat(), expected.entropies.flat())
      expect(actual.names).toEqual(expected.names)
      actual.gradients.forEach((gradient, index) => close(gradient, expected.gradients[index]!))
    }

    const cases = [
      { name: 'LoRA on q and v, the tied embedding frozen', tied: true, lora: true, temperature: 1 },
      { name: 'full fine-tuning, the tied embedding trained', tied: true, lora: false, temperature: 1 },
      { name: 'full fine-tuning, an untied lm_head trained', tied: false, lora: false, temperature: 1 },
      // At a sampling temperature: values and gradients of log softmax(logits / T), as tf differentiates the explicit form.
      { name: 'LoRA on q and v at temperature 0.5', tied: true, lora: true, temperature: 0.5 },
      { name: 'full fine-tuning, the tied embedding trained, at temperature 0.7', tied: true, lora: false, temperature: 0.7 },
      { name: 'full fine-tuning, an untied lm_head trained, at temperature 1.8', tied: false, lora: false, temperature: 1.8 },
    ]
    for (const { name, tied, lora, temperature } of cases) {
      it(name, () => {
        const model = createTinyQwen3(4, { tie_word_embeddings: tied })
        if (lora) {
          const adapters = applyLora(model, { rank: 2, alpha: 4 })
          for (const [parameter, variable] of adapters.parameters())
            if (parameter.includes('lora_B')) variable.assign(tf.randomNormal(variable.shape, 0, 0.5, 'float32', 3))
        }
        const reference = wholeLogits(model, temperature)
        const expected = valuesAndGradients(model, reference)
        const before = tf.memory().numTensors
        for (const logitsChunkSize of [1, 3, 100]) {
          const chunked = valuesAndGradients(
            model,
            () => sequenceLogprobs(model, { promptIds, responseIds }, { withEntropy: true, logitsChunkSize, temperature }) as never,
          )
          expectClose(chunked, expected)
        }
        expect(tf.memory().numTensors).toBe(before)
        if (lora) expect(expected.names.every((parameter) => parameter.includes('lora_'))).toBe(true)
        else expect(expected.names.some((parameter) => parameter.endsWith(tied ? '/model.embed_tokens.weight' : '/lm_head.weight'))).toBe(true)
        reference().dispose()
        model.dispose()
      })
    }

    it('refuses a chunk size that is not a positive integer', () => {
      const model = tinyQwen3(1)
      expect(() => sequenceLogprobs(model, { promptIds, responseIds }, { logitsChunkSize: 0 })).toThrow(/logitsChunkSize/)
      model.dispose()
    })
  })
})

describe('sequenceLogprobs at a sampling temperature', () => {
  /** The explicit form: log softmax(logits / T) at each response token and the entropy of softmax(logits / T), one unpadded forward per sequence. */
  function explicit(model: CausalLanguageModel, temperature: number): { logprobs: number[][]; entropies: number[][] } {
    return tf.tidy(() => {
      const logprobs: number[][] = []
      const entropies: number[][] = []
      promptIds.forEach((prompt, row) => {
        const response = responseIds[row]!
        const logits = tf.div(model.forward([[...prompt, ...response]]), temperature) // [1, time, vocab]
        const logProbabilities = tf.logSoftmax(logits)
        const entropy = (tf.neg(tf.sum(tf.mul(tf.exp(logProbabilities), logProbabilities), -1)).arraySync() as number[][])[0]!
        const values = (logProbabilities.arraySync() as number[][][])[0]!
        logprobs.push(response.map((token, step) => values[prompt.length - 1 + step]![token]!))
        entropies.push(response.map((_, step) => entropy[prompt.length - 1 + step]!))
      })
      return { logprobs, entropies }
    })
  }

  /** Untied head; `adapter`: a LoRA adapter on lm_head, so the logits are computed whole rather than in chunks. */
  function model(adapter: boolean): CausalLanguageModel {
    const made = createTinyQwen3(6, { tie_word_embeddings: false })
    if (adapter) {
      const adapters = applyLora(made, { rank: 2, alpha: 4, targetModules: ['lm_head'] })
      for (const [parameter, variable] of adapters.parameters())
        if (parameter.includes('lora_B')) variable.assign(tf.randomNormal(variable.shape, 0, 0.5, 'float32', 8))
      expect(made.plainHeadWeight()).toBeUndefined()
    } else expect(made.plainHeadWeight()).toBeDefined()
    return made
  }

  it.each([
    ['the chunked head', false],
    ['a head with an adapter (whole logits)', true],
  ])('gives log softmax(logits / T) and the entropy of softmax(logits / T): %s', (_, adapter) => {
    const tiny = model(adapter as boolean)
    for (const temperature of [0.5, 1, 1.7]) {
      const { logprobs, entropies, responseMask } = sequenceLogprobs(tiny, { promptIds, responseIds }, { temperature, withEntropy: true })
      const values = logprobs.arraySync()
      const entropyValues = entropies!.arraySync()
      const expected = explicit(tiny, temperature)
      responseIds.forEach((response, row) =>
        response.forEach((_, step) => {
          expect(Math.abs(values[row]![step]! - expected.logprobs[row]![step]!), `T ${temperature} [${row}, ${step}]`).toBeLessThan(1e-5)
          expect(Math.abs(entropyValues[row]![step]! - expected.entropies[row]![step]!), `T ${temperature} entropy [${row}, ${step}]`).toBeLessThan(1e-5)
        }),
      )
      if (temperature !== 1) {
        const untempered = explicit(tiny, 1)
        expect(Math.abs(values[0]![0]! - untempered.logprobs[0]![0]!)).toBeGreaterThan(1e-2)
      }
      tf.dispose([logprobs, entropies!, responseMask])
    }
    tiny.dispose()
  })

  it('is the default at temperature 1, bit for bit', () => {
    const tiny = model(false)
    const byDefault = sequenceLogprobs(tiny, { promptIds, responseIds }, { withEntropy: true })
    const atOne = sequenceLogprobs(tiny, { promptIds, responseIds }, { withEntropy: true, temperature: 1 })
    expect(Array.from(atOne.logprobs.dataSync())).toEqual(Array.from(byDefault.logprobs.dataSync()))
    expect(Array.from(atOne.entropies!.dataSync())).toEqual(Array.from(byDefault.entropies!.dataSync()))
    tf.dispose([byDefault, atOne] as unknown as tf.TensorContainer)
    tiny.dispose()
  })

  it('leaves numTensors unchanged, forward and backward, on both head paths', async () => {
    for (const adapter of [false, true]) {
      const tiny = model(adapter)
      const parameters = [...tiny.trainableParameters().values()]
      await expectNoLeaks(
        () => {
          const { value, grads } = tf.variableGrads(() => {
            const { logprobs, entropies } = sequenceLogprobs(tiny, { promptIds, responseIds }, { temperature: 0.6, withEntropy: true, logitsChunkSize: 2 })
            return tf.add(tf.sum(logprobs), tf.sum(entropies!)) as tf.Scalar
          }, parameters)
          return [value, ...Object.values(grads)]
        },
        { label: `sequenceLogprobs at temperature 0.6${adapter ? ', head adapter' : ''}` },
      )
      tiny.dispose()
    }
  })

  it('refuses a temperature that is not positive and finite, naming it', () => {
    const tiny = tinyQwen3(1)
    for (const temperature of [0, -0.5, Number.POSITIVE_INFINITY, Number.NaN, '0.5']) {
      let caught: unknown
      try {
        sequenceLogprobs(tiny, { promptIds, responseIds }, { temperature: temperature as number })
      } catch (error) {
        caught = error
      }
      expect(InvalidArgumentError.isInstance(caught), String(temperature)).toBe(true)
      expect((caught as InvalidArgumentError).argument).toBe('options.temperature')
    }
    tiny.dispose()
  })
})

describe('sequenceLogprobs on a batch with repeated rows (a small game: the same states again and again)', () => {
  // Rows 0, 2, 5 are one sequence, rows 1 and 4 another; row 3 differs from row 0 in its last prompt token only.
  const repeatedPrompts = [[3, 7, 1], [9], [3, 7, 1], [3, 7, 2], [9], [3, 7, 1]]
  const repeatedResponses = [
    [5, 2],
    [10, 0, 3],
    [5, 2],
    [5, 2],
    [10, 0, 3],
    [5, 2],
  ]
  const distinctOf = [0, 1, 0, 2, 1, 0] // each row's sequence among the distinct ones
  const distinctIndices = [0, 1, 3]
  const weights = [0.5, -1.25, 2, 0.75, 1.5, -0.3]

  /** The rows of each of `tiny.hiddenStates`' calls, recorded (`spy.mockRestore()` ends it). */
  function rowsPerForward(tiny: CausalLanguageModel) {
    const batchSizes: number[] = []
    const hiddenStates = tiny.hiddenStates.bind(tiny)
    const spy = vi.spyOn(tiny, 'hiddenStates').mockImplementation((inputIds, options) => {
      batchSizes.push((inputIds as readonly unknown[]).length)
      return hiddenStates(inputIds, options)
    })
    return { batchSizes, spy }
  }

  /** The weighted loss of the rows' log-probs, entropies and values, and its gradients by parameter. */
  function lossAndGradients(tiny: CausalLanguageModel, head: ValueHead, prompts: number[][], responses: number[][], rowWeights: number[]) {
    const parameters = [...tiny.trainableParameters().values(), head.weight]
    const { value, grads } = tf.variableGrads(() => {
      const { logprobs, entropies, values } = sequenceLogprobs(tiny, { promptIds: prompts, responseIds: responses }, { withEntropy: true, valueHead: head })
      const perRow = tf.sum(tf.add(tf.add(logprobs, tf.mul(0.1, entropies!)), tf.mul(0.2, values)), 1) // [rows]
      return tf.sum(tf.mul(perRow, tf.tensor1d(rowWeights))) as tf.Scalar
    }, parameters)
    return {
      loss: value.dataSync()[0]!,
      gradients: parameters.map((parameter) => grads[parameter.name]!.dataSync() as Float32Array),
      dispose: () => tf.dispose([value, ...Object.values(grads)]),
    }
  }

  it('runs the model on the distinct rows once and gives every row its own scores and gradient', () => {
    const tiny = tinyQwen3(4)
    const head = createValueHead(tiny, { seed: 3, initializerRange: 0.5 })
    const { batchSizes, spy } = rowsPerForward(tiny)
    const repeated = sequenceLogprobs(tiny, { promptIds: repeatedPrompts, responseIds: repeatedResponses }, { withEntropy: true, valueHead: head })
    expect(batchSizes).toEqual([3])
    // The reference: the distinct rows alone (no repeats), each row read from its own.
    const distinct = sequenceLogprobs(
      tiny,
      { promptIds: distinctIndices.map((row) => repeatedPrompts[row]!), responseIds: distinctIndices.map((row) => repeatedResponses[row]!) },
      { withEntropy: true, valueHead: head },
    )
    for (const key of ['logprobs', 'entropies', 'values', 'responseMask'] as const) {
      const got = repeated[key]!.arraySync()
      const expected = distinct[key]!.arraySync()
      expect(got).toHaveLength(6)
      got.forEach((row, index) => row.forEach((value, column) => expect(Math.abs(value - expected[distinctOf[index]!]![column]!)).toBeLessThan(1e-6)))
    }
    tf.dispose([...Object.values(repeated), ...Object.values(distinct)])
    // Gradients: each repeat's weight reaches the weights (the gather's gradient sums the copies).
    batchSizes.length = 0
    const got = lossAndGradients(tiny, head, repeatedPrompts, repeatedResponses, weights)
    expect(batchSizes).toEqual([3])
    const summed = distinctIndices.map((_, index) => weights.reduce((total, weight, row) => total + (distinctOf[row] === index ? weight : 0), 0))
    const expected = lossAndGradients(
      tiny,
      head,
      distinctIndices.map((row) => repeatedPrompts[row]!),
      distinctIndices.map((row) => repeatedResponses[row]!),
      summed,
    )
    expect(got.loss).toBeCloseTo(expected.loss, 4)
    got.gradients.forEach((gradient, index) => {
      const reference = expected.gradients[index]!
      const scale = Math.max(1e-3, ...Array.from(reference, Math.abs))
      gradient.forEach((value, position) => expect(Math.abs(value - reference[position]!) / scale).toBeLessThan(1e-4))
    })
    got.dispose()
    expected.dispose()
    spy.mockRestore()
    head.dispose()
    tiny.dispose()
  })

  it('runs every row when the forward draws dropout (training with a LoRA adapter of dropout > 0), not otherwise', () => {
    const tiny = tinyQwen3(5)
    const { batchSizes, spy } = rowsPerForward(tiny)
    const rows = (training: boolean) => {
      tf.dispose(Object.values(sequenceLogprobs(tiny, { promptIds: repeatedPrompts, responseIds: repeatedResponses }, { training })))
      return batchSizes.splice(0).at(0)
    }
    expect(rows(true)).toBe(3) // training mode without dropout draws nothing
    const withoutDropout = applyLora(tiny, { rank: 2, alpha: 4, dropout: 0, seed: 1 })
    expect(rows(true)).toBe(3)
    withoutDropout.remove()
    const withDropout = applyLora(tiny, { rank: 2, alpha: 4, dropout: 0.1, seed: 1 })
    expect(rows(true)).toBe(6) // each row its own dropout
    expect(rows(false)).toBe(3) // inference draws none
    withDropout.remove()
    spy.mockRestore()
    tiny.dispose()
  })

  it('keeps rows apart whose ids are equal but whose masks are not (a prompt token that is the padding id)', () => {
    const tiny = tinyQwen3(6)
    const pad = tiny.config.padTokenId ?? 0
    const prompts = [[pad, 5], [5], [pad, 5]]
    const responses = [[2], [2], [2]]
    const { batchSizes, spy } = rowsPerForward(tiny)
    const { logprobs, responseMask } = sequenceLogprobs(tiny, { promptIds: prompts, responseIds: responses })
    expect(batchSizes).toEqual([2])
    const values = Array.from(logprobs.dataSync())
    expect(values[0]).toBe(values[2])
    expect(values[0]).not.toBe(values[1])
    for (const [row, prompt] of prompts.entries()) {
      const alone = sequenceLogprobs(tiny, { promptIds: [prompt], responseIds: [responses[row]!] })
      expect(Math.abs(alone.logprobs.dataSync()[0]! - values[row]!)).toBeLessThan(1e-6)
      tf.dispose([alone.logprobs, alone.responseMask])
    }
    tf.dispose([logprobs, responseMask])
    spy.mockRestore()
    tiny.dispose()
  })

  it('leaves numTensors unchanged, forward and backward, on repeated rows', async () => {
    const tiny = tinyQwen3(7)
    const parameters = [...tiny.trainableParameters().values()]
    await expectNoLeaks(
      () => {
        const { value, grads } = tf.variableGrads(() => {
          const { logprobs, entropies } = sequenceLogprobs(tiny, { promptIds: repeatedPrompts, responseIds: repeatedResponses }, { withEntropy: true })
          return tf.add(tf.sum(logprobs), tf.sum(entropies!)) as tf.Scalar
        }, parameters)
        return [value, ...Object.values(grads)]
      },
      { label: 'sequenceLogprobs on repeated rows' },
    )
    tiny.dispose()
  })
})

describe('sequenceLogprobs with klTo: the exact KL to a reference over the whole vocabulary', () => {
  const { responseLength, promptLength, inputIds, attentionMask } = paddedBatch()
  const maskRows = attentionMask.map((row) => row.slice(promptLength))

  /** The tempered logits at the response positions, `[batch, responseLength, vocab]`, from the model's whole head. */
  const responseLogits = (model: CausalLanguageModel, temperature: number) => {
    const hidden = model.hiddenStates(inputIds, { attentionMask })
    const raw = model.logitsFromHidden(tf.slice(hidden, [0, promptLength - 1, 0], [inputIds.length, responseLength, hidden.shape[2]]) as tf.Tensor3D)
    return tf.div(raw, temperature)
  }

  /** A plain loop over the two distributions' values: Σ p (log p − log q) or Σ q (log q − log p), 0 at padding. */
  function plainKl(model: CausalLanguageModel, reference: CausalLanguageModel, direction: 'reverse' | 'forward', temperature: number): number[][] {
    const [policy, referenceLog] = tf.tidy(() =>
      [responseLogits(model, temperature), responseLogits(reference, temperature)].map((logits) => tf.logSoftmax(logits).arraySync() as number[][][]),
    )
    return policy!.map((row, b) =>
      row.map((logP, t) => {
        if (maskRows[b]![t] === 0) return 0
        let total = 0
        logP.forEach((lp, v) => {
          const lq = referenceLog![b]![t]![v]!
          total += direction === 'reverse' ? Math.exp(lp) * (lp - lq) : Math.exp(lq) * (lq - lp)
        })
        return total
      }),
    )
  }

  /** The gradient of Σ kl·w by tf's autograd of the explicit form (the reference's log-softmax a constant). */
  function explicitGradients(
    model: CausalLanguageModel,
    reference: CausalLanguageModel,
    direction: 'reverse' | 'forward',
    temperature: number,
    weights: tf.Tensor,
  ) {
    const parameters = [...model.trainableParameters().values()]
    const referenceLog = tf.tidy(() => tf.logSoftmax(responseLogits(reference, temperature)))
    const mask = tf.tensor2d(maskRows, [inputIds.length, responseLength])
    const { value, grads } = tf.variableGrads(() => {
      const logP = tf.logSoftmax(responseLogits(model, temperature))
      const difference = tf.sub(logP, referenceLog)
      const kl = direction === 'reverse' ? tf.sum(tf.mul(tf.exp(logP), difference), -1) : tf.neg(tf.sum(tf.mul(tf.exp(referenceLog), difference), -1))
      return tf.sum(tf.mul(tf.mul(kl, mask), weights)) as tf.Scalar
    }, parameters)
    const gradients = parameters.map((parameter) => Array.from(grads[parameter.name]!.dataSync()))
    tf.dispose([value, referenceLog, mask, ...Object.values(grads)])
    return gradients
  }

  function models(adapter: boolean) {
    const model = createTinyQwen3(11, { tie_word_embeddings: false })
    const reference = createTinyQwen3(12, { tie_word_embeddings: false })
    if (adapter) {
      const adapters = applyLora(model, { rank: 2, alpha: 4, targetModules: ['lm_head', 'q_proj'] })
      for (const [parameter, variable] of adapters.parameters())
        if (parameter.includes('lora_B')) variable.assign(tf.randomNormal(variable.shape, 0, 0.5, 'float32', 5))
      expect(model.plainHeadWeight()).toBeUndefined()
    } else expect(model.plainHeadWeight()).toBeDefined()
    return { model, reference }
  }

  const close = (actual: number[], expected: number[], tolerance: number) => {
    const scale = Math.max(1e-3, ...expected.map(Math.abs))
    actual.forEach((value, index) => expect(Math.abs(value - expected[index]!)).toBeLessThanOrEqual(tolerance * scale))
  }

  for (const adapter of [false, true]) {
    for (const direction of ['reverse', 'forward'] as const) {
      it(`equals a plain loop, its gradient tf's of the explicit form: ${direction}, ${adapter ? 'a head with an adapter (whole logits)' : 'the chunked head'}`, () => {
        const { model, reference } = models(adapter)
        const weights = tf.randomNormal([3, 4], 0, 1, 'float32', 13)
        const parameters = [...model.trainableParameters().values()]
        for (const temperature of [1, 0.7]) {
          const expected = plainKl(model, reference, direction, temperature)
          expect(expected.flat().every((value) => value >= 0)).toBe(true)
          expect(Math.max(...expected.flat())).toBeGreaterThan(1e-2) // two different models: a KL the check can see
          // … and one direction from the other (the two KLs of close distributions agree to second order).
          const other = plainKl(model, reference, direction === 'reverse' ? 'forward' : 'reverse', temperature).flat()
          expect(Math.max(...expected.flat().map((value, index) => Math.abs(value - other[index]!) / Math.max(value, 1e-9)))).toBeGreaterThan(0.1)
          const expectedGradients = explicitGradients(model, reference, direction, temperature, weights)
          for (const logitsChunkSize of [1, 3, 100]) {
            const before = tf.memory().numTensors
            // At T ≠ 1 with the entropy too: the KL is then the output's third row, its gradient read from that row.
            const options = { temperature, logitsChunkSize, withEntropy: temperature !== 1, klTo: { reference, direction } }
            const values = tf.tidy(() => sequenceLogprobs(model, { promptIds, responseIds }, options).kl!.arraySync())
            close(values.flat(), expected.flat(), 2e-5)
            const { value, grads } = tf.variableGrads(
              () => tf.sum(tf.mul(sequenceLogprobs(model, { promptIds, responseIds }, options).kl!, weights)) as tf.Scalar,
              parameters,
            )
            parameters.forEach((parameter, index) => close(Array.from(grads[parameter.name]!.dataSync()), expectedGradients[index]!, 2e-5))
            tf.dispose([value, ...Object.values(grads)])
            expect(tf.memory().numTensors).toBe(before)
          }
        }
        // The reference gets no gradient: its weights are not the model's.
        expect([...reference.trainableParameters().values()].some((weight) => parameters.includes(weight))).toBe(false)
        weights.dispose()
        model.dispose()
        reference.dispose()
      })
    }
  }

  it('is 0 against a copy of the model itself', () => {
    const model = createTinyQwen3(14, { tie_word_embeddings: false })
    const copy = createTinyQwen3(14, { tie_word_embeddings: false })
    for (const direction of ['reverse', 'forward'] as const) {
      const values = tf.tidy(() => sequenceLogprobs(model, { promptIds, responseIds }, { klTo: { reference: copy, direction } }).kl!.arraySync())
      values.flat().forEach((value) => expect(Math.abs(value)).toBeLessThan(1e-6))
    }
    model.dispose()
    copy.dispose()
  })

  it('refuses a reference of another vocabulary, naming it', () => {
    const model = createTinyQwen3(15)
    const other = createModel('tiny', { vocabSize: 40, seed: 1 })
    expect(() => sequenceLogprobs(model, { promptIds, responseIds }, { klTo: { reference: other, direction: 'forward' } })).toThrow(InvalidArgumentError)
    expect(() => sequenceLogprobs(model, { promptIds, responseIds }, { klTo: { reference: other, direction: 'forward' } })).toThrow(/klTo\.reference\.config/)
    expect(() => sequenceLogprobs(model, { promptIds, responseIds }, { klTo: { reference: model, direction: 'both' as never } })).toThrow(/klTo/)
    model.dispose()
    other.dispose()
  })
})
