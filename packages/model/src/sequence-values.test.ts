import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, ShapeError } from '@ludic/core'
import { tokenLogprobs } from '@ludic/tensors'
import { expectNoLeaks } from '@ludic/tensors/test'
import { beforeAll, describe, expect, it } from 'vitest'
import { createValueHead, type ValueHead } from './heads/scalar-heads.js'
import { applyLora } from './lora/apply-lora.js'
import type { CausalLanguageModel } from './model/causal-language-model.js'
import { createModel } from './model/create-model.js'
import { sequenceLogprobs } from './sequence-logprobs.js'
import { sequenceValues } from './sequence-values.js'
import { initTestBackend } from './test/init-test-backend.js'
import { createTinyQwen3 } from './test/tiny-qwen3.js'

beforeAll(initTestBackend)

// Prompts and responses of different lengths: left padding of 4, 2 and 0 tokens, right padding of 2, 0 and 3.
const promptIds = [[3, 7, 1], [9], [4, 4, 2, 8, 6]]
const responseIds = [[5, 2], [10, 0, 3, 7], [1]]
const promptLength = 5
const responseLength = 4

const tinyQwen3 = (seed: number, overrides: Record<string, unknown> = {}): CausalLanguageModel => createTinyQwen3(seed, { attention_bias: true, ...overrides })

/** The batch padded by hand in verl's layout. */
const padded = {
  inputIds: promptIds.map((prompt, row) => {
    const response = responseIds[row]!
    return [...Array(promptLength - prompt.length).fill(0), ...prompt, ...response, ...Array(responseLength - response.length).fill(0)]
  }),
  attentionMask: promptIds.map((prompt, row) => {
    const response = responseIds[row]!.length
    return [...Array(promptLength - prompt.length).fill(0), ...Array(prompt.length + response).fill(1), ...Array(responseLength - response).fill(0)]
  }),
  responseLength,
}

/**
 * The plain computation: the value head over every position of the padded batch, then the columns before each
 * response token (`values[:, -responseLength - 1:-1]`, verl's critic), zero at padding.
 */
function plainValues(head: ValueHead): tf.Tensor2D {
  return tf.tidy(() => {
    const all = head.values(padded.inputIds, { attentionMask: padded.attentionMask }) // [batch, promptLength + responseLength]
    const mask = tf.tensor2d(padded.attentionMask.map((row) => row.slice(promptLength)))
    return tf.mul(tf.slice(all, [0, promptLength - 1], [3, responseLength]), mask) as tf.Tensor2D
  })
}

/** The plain log-probs: every response position's whole logits. */
function plainLogprobs(model: CausalLanguageModel): tf.Tensor2D {
  return tf.tidy(() => {
    const hidden = model.hiddenStates(padded.inputIds, { attentionMask: padded.attentionMask })
    const logits = model.logitsFromHidden(tf.slice(hidden, [0, promptLength - 1, 0], [3, responseLength, hidden.shape[2]]) as tf.Tensor3D)
    const targets = tf.tensor2d(
      padded.inputIds.map((row) => row.slice(promptLength)),
      undefined,
      'int32',
    )
    const mask = tf.tensor2d(padded.attentionMask.map((row) => row.slice(promptLength)))
    return tf.mul(tokenLogprobs(logits, targets), mask) as tf.Tensor2D
  })
}

function expectClose(actual: tf.Tensor | Float32Array, expected: tf.Tensor | Float32Array, tolerance: number, label: string): void {
  const a = actual instanceof tf.Tensor ? actual.dataSync() : actual
  const b = expected instanceof tf.Tensor ? expected.dataSync() : expected
  expect(a.length, label).toBe(b.length)
  const scale = Math.max(1e-3, ...Array.from(b, Math.abs))
  a.forEach((value, index) => expect(Math.abs(value - b[index]!), `${label}[${index}]: ${value} vs ${b[index]}`).toBeLessThanOrEqual(tolerance * scale))
}

/** The models the layouts differ on: the chunked head path (tied, untied) and the whole-logits path (LoRA on lm_head). */
const cases = [
  { name: 'a tied embedding (chunked log-probs)', make: () => tinyQwen3(1, { tie_word_embeddings: true }) },
  { name: 'an untied lm_head (chunked log-probs)', make: () => tinyQwen3(2, { tie_word_embeddings: false }) },
  {
    name: 'LoRA on lm_head (whole logits)',
    make: () => {
      const model = tinyQwen3(3, { tie_word_embeddings: false })
      const adapters = applyLora(model, { rank: 2, alpha: 4, targetModules: ['q_proj', 'lm_head'] })
      for (const [name, variable] of adapters.parameters()) if (name.includes('lora_B')) variable.assign(tf.randomNormal(variable.shape, 0, 0.5, 'float32', 5))
      expect(model.plainHeadWeight()).toBeUndefined()
      return model
    },
  },
]

describe('values of response tokens (a critic on the policy trunk, or a separate one)', () => {
  for (const { name, make } of cases) {
    it(`equal the value head over the whole sequence read before each response token, with ${name}`, () => {
      const model = make()
      const head = createValueHead(model, { seed: 7, initializerRange: 1 })
      const expected = plainValues(head)
      const before = tf.memory().numTensors
      const variants = [
        () => sequenceValues(model, head, { promptIds, responseIds }),
        () => sequenceValues(model, head, padded, { recomputeLayers: true }),
        () => sequenceLogprobs(model, { promptIds, responseIds }, { valueHead: head }),
        () => sequenceLogprobs(model, padded, { valueHead: head, withEntropy: true, logitsChunkSize: 1 }),
        () => sequenceLogprobs(model, { promptIds, responseIds }, { valueHead: head, logitsChunkSize: 100, recomputeLayers: true, training: true }),
      ]
      variants.forEach((variant, index) => {
        const result = variant()
        expect(result.values.shape).toEqual([3, responseLength])
        expect(result.responseMask.arraySync()).toEqual([
          [1, 1, 0, 0],
          [1, 1, 1, 1],
          [1, 0, 0, 0],
        ])
        expectClose(result.values, expected, 1e-6, `variant ${index}`)
        const values = result.values.arraySync()
        // Padding is exactly zero, never a value of a pad token.
        for (const [row, step] of [
          [0, 2],
          [0, 3],
          [2, 1],
          [2, 3],
        ] as const)
          expect(Math.abs(values[row]![step]!)).toBe(0)
        tf.dispose(result as unknown as tf.TensorContainer)
      })
      expect(tf.memory().numTensors).toBe(before)
      expect(new Set(expected.dataSync()).size).toBeGreaterThan(4) // the heads' values differ by position
      expected.dispose()
      model.dispose()
    })
  }

  it('leave the log-probs and entropies bit for bit as without a value head (one forward pass for both)', () => {
    for (const { make } of cases) {
      const model = make()
      const head = createValueHead(model, { seed: 8 })
      for (const logitsChunkSize of [undefined, 2]) {
        const without = sequenceLogprobs(
          model,
          { promptIds, responseIds },
          { withEntropy: true, ...(logitsChunkSize === undefined ? {} : { logitsChunkSize }) },
        )
        const withHead = sequenceLogprobs(
          model,
          { promptIds, responseIds },
          { withEntropy: true, valueHead: head, ...(logitsChunkSize === undefined ? {} : { logitsChunkSize }) },
        )
        expect(Array.from(withHead.logprobs.dataSync())).toEqual(Array.from(without.logprobs.dataSync()))
        expect(Array.from(withHead.entropies!.dataSync())).toEqual(Array.from(without.entropies!.dataSync()))
        expect(without.values).toBeUndefined()
        expectClose(withHead.logprobs, plainLogprobs(model), 2e-5, 'log-probs')
        tf.dispose([without, withHead] as unknown as tf.TensorContainer)
      }
      model.dispose()
    }
  })

  describe('have the gradients of the plain computation', () => {
    /** Gradients of `loss` with respect to `variables`, as arrays. */
    function gradientsOf(loss: () => tf.Scalar, variables: tf.Variable[]): Float32Array[] {
      const { value, grads } = tf.variableGrads(loss, variables)
      const result = variables.map((variable) => {
        expect(grads[variable.name], variable.name).toBeDefined()
        return grads[variable.name]!.dataSync() as Float32Array
      })
      tf.dispose([value, ...Object.values(grads)])
      return result
    }

    for (const { name, make } of cases) {
      it(`for the head and the trunk, alone and beside the log-probs, with ${name}`, () => {
        const model = make()
        const head = createValueHead(model, { seed: 9, initializerRange: 1 })
        const trunk = [...model.trainableParameters()].filter(([parameter]) => parameter !== 'score.weight').map(([, variable]) => variable)
        expect(trunk.length).toBeGreaterThan(0)
        const variables = [head.weight, ...trunk]
        const valueWeights = tf.randomNormal([3, responseLength], 0, 1, 'float32', 11)
        const logprobWeights = tf.randomNormal([3, responseLength], 0, 1, 'float32', 12)
        const weighted = (tensor: tf.Tensor, weights: tf.Tensor) => tf.sum(tf.mul(tensor, weights))

        // The separate critic: values alone (the output projection takes no part).
        const criticVariables = variables.filter((variable) => !variable.name.includes('/lm_head.'))
        const plainCritic = gradientsOf(() => weighted(plainValues(head), valueWeights) as tf.Scalar, criticVariables)
        for (const recomputeLayers of [false, true]) {
          const critic = gradientsOf(
            () => tf.tidy(() => weighted(sequenceValues(model, head, { promptIds, responseIds }, { recomputeLayers }).values, valueWeights)) as tf.Scalar,
            criticVariables,
          )
          critic.forEach((gradient, index) => expectClose(gradient, plainCritic[index]!, 2e-5, `critic ${criticVariables[index]!.name}`))
        }
        expect(plainCritic[0]!.some((value) => value !== 0)).toBe(true)

        // The shared trunk: one forward pass, log-probs and values, one loss.
        const plainShared = gradientsOf(
          () => tf.add(weighted(plainLogprobs(model), logprobWeights), weighted(plainValues(head), valueWeights)) as tf.Scalar,
          variables,
        )
        for (const options of [{}, { logitsChunkSize: 1 }, { recomputeLayers: true }]) {
          const shared = gradientsOf(
            () =>
              tf.tidy(() => {
                const { logprobs, values } = sequenceLogprobs(model, { promptIds, responseIds }, { valueHead: head, ...options })
                return tf.add(weighted(logprobs, logprobWeights), weighted(values, valueWeights))
              }) as tf.Scalar,
            variables,
          )
          shared.forEach((gradient, index) => expectClose(gradient, plainShared[index]!, 2e-5, `shared ${JSON.stringify(options)} ${variables[index]!.name}`))
        }
        tf.dispose([valueWeights, logprobWeights])
        model.dispose()
      })
    }
  })

  it('train without leaking: a step of either form leaves numTensors unchanged', async () => {
    const model = tinyQwen3(4)
    const head = createValueHead(model, { seed: 1 })
    const critic = tinyQwen3(5)
    const criticHead = createValueHead(critic, { seed: 2 })
    const targets = tf.tensor2d([
      [1, -1, 0, 0],
      [0.5, 0.5, 0.5, 0.5],
      [2, 0, 0, 0],
    ])
    const optimizer = tf.train.adam(1e-2)
    const sharedStep = () =>
      optimizer.minimize(
        () => {
          const { logprobs, values, responseMask } = sequenceLogprobs(model, { promptIds, responseIds }, { valueHead: head, withEntropy: true })
          const valueLoss = tf.div(tf.sum(tf.mul(tf.square(tf.sub(values, targets)), responseMask)), tf.sum(responseMask))
          return tf.sub(valueLoss, tf.mean(logprobs)) as tf.Scalar
        },
        true,
        [...model.trainableParameters().values()],
      )
    const criticLoss = () => {
      const { values, responseMask } = sequenceValues(critic, criticHead, padded, { recomputeLayers: true })
      return tf.div(tf.sum(tf.mul(tf.square(tf.sub(values, targets)), responseMask)), tf.sum(responseMask)) as tf.Scalar
    }
    const criticStep = () => optimizer.minimize(criticLoss, true, [...critic.trainableParameters().values()])
    const first = criticLoss()
    const firstLoss = first.dataSync()[0]!
    first.dispose()
    for (let step = 0; step < 20; step++) tf.dispose([criticStep()!, sharedStep()!])
    const last = criticLoss()
    expect(last.dataSync()[0]).toBeLessThan(firstLoss / 2)
    last.dispose()
    await expectNoLeaks(sharedStep, { label: 'a shared-trunk step' })
    await expectNoLeaks(criticStep, { label: 'a critic step' })
    await expectNoLeaks(() => sequenceValues(critic, criticHead, { promptIds, responseIds }), { label: 'sequenceValues' })
    tf.dispose([targets])
    optimizer.dispose()
    model.dispose()
    critic.dispose()
  })

  it('a value head trains under LoRA (frozen base), whichever was added first', () => {
    for (const order of ['lora, then the head', 'the head, then lora'] as const) {
      const model = tinyQwen3(6)
      let head: ValueHead | undefined
      if (order === 'the head, then lora') head = createValueHead(model, { seed: 3 })
      applyLora(model, { rank: 2, alpha: 4 })
      head ??= createValueHead(model, { seed: 3 })
      const trainable = [...model.trainableParameters().keys()]
      expect(trainable, order).toContain('score.weight')
      expect(
        trainable.every((name) => name === 'score.weight' || name.includes('.lora_')),
        order,
      ).toBe(true)
      const base = model.parameter('model.layers.0.mlp.down_proj.weight').dataSync().slice()
      const headBefore = head.weight.dataSync().slice()
      const target = tf.scalar(3)
      const optimizer = tf.train.adam(5e-2)
      const loss = () => {
        const { values, responseMask } = sequenceValues(model, head, { promptIds, responseIds })
        return tf.div(tf.sum(tf.mul(tf.square(tf.sub(values, target)), responseMask)), tf.sum(responseMask)) as tf.Scalar
      }
      const initial = loss()
      const initialLoss = initial.dataSync()[0]!
      initial.dispose()
      for (let step = 0; step < 30; step++) tf.dispose(optimizer.minimize(loss, true, [...model.trainableParameters().values()]) ?? [])
      const final = loss()
      expect(final.dataSync()[0], order).toBeLessThan(initialLoss / 4)
      expect(Array.from(head.weight.dataSync()), order).not.toEqual(Array.from(headBefore))
      expect(Array.from(model.parameter('model.layers.0.mlp.down_proj.weight').dataSync()), order).toEqual(Array.from(base))
      tf.dispose([final, target])
      optimizer.dispose()
      model.dispose()
    }
  })

  it('refuses a head of another model, of another width or disposed, and misshapen batches, with typed errors', () => {
    const model = tinyQwen3(7)
    const head = createValueHead(model)
    const other = tinyQwen3(8)
    const otherHead = createValueHead(other)
    const wide = createModel('tiny', { vocabSize: 11, seed: 1, overrides: { numHiddenLayers: 1 } })
    const wideHead = createValueHead(wide)
    const expectError = (run: () => unknown, type: typeof InvalidArgumentError | typeof ShapeError, argument: string) => {
      let caught: unknown
      try {
        tf.dispose(run() as tf.TensorContainer)
      } catch (error) {
        caught = error
      }
      expect(type.isInstance(caught), `${argument}: ${String(caught)}`).toBe(true)
      expect((caught as { argument: string }).argument).toBe(argument)
    }
    const before = tf.memory().numTensors
    expectError(() => sequenceValues(model, otherHead, { promptIds, responseIds }), InvalidArgumentError, 'valueHead')
    expectError(() => sequenceLogprobs(model, { promptIds, responseIds }, { valueHead: otherHead }), InvalidArgumentError, 'options.valueHead')
    expectError(() => sequenceValues(model, wideHead, { promptIds, responseIds }), ShapeError, 'valueHead.weight')
    expectError(() => sequenceLogprobs(model, { promptIds, responseIds }, { valueHead: wideHead }), ShapeError, 'options.valueHead.weight')
    expectError(() => sequenceValues(model, {} as ValueHead, { promptIds, responseIds }), InvalidArgumentError, 'valueHead')
    expectError(() => sequenceLogprobs(model, { promptIds, responseIds }, { valueHead: 'score' as never }), InvalidArgumentError, 'options.valueHead')
    expectError(() => sequenceValues(model, head, { promptIds, responseIds: responseIds.slice(1) }), ShapeError, 'sequences.responseIds')
    expectError(() => sequenceValues(model, head, { ...padded, responseLength: 9 }), InvalidArgumentError, 'sequences.responseLength')
    expectError(() => sequenceValues(model, head, { ...padded, attentionMask: padded.attentionMask.slice(1) }), ShapeError, 'sequences.attentionMask')
    expectError(() => sequenceValues(model, head, null as never), InvalidArgumentError, 'sequences')
    expectError(() => sequenceValues(model, head, { promptIds, responseIds }, { logitsChunkSize: 4 } as never), InvalidArgumentError, 'options')
    otherHead.dispose()
    expectError(() => sequenceValues(other, otherHead, { promptIds, responseIds }), InvalidArgumentError, 'valueHead')
    expect(tf.memory().numTensors).toBe(before - 1) // the disposed head's weight
    model.dispose()
    other.dispose()
    wide.dispose()
  })
})
