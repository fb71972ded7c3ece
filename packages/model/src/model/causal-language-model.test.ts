import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, ShapeError } from '@ludic/core'
import { expectNoLeaks } from '@ludic/tensors/test'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { initTestBackend } from '../test/init-test-backend.js'
import { createModel } from './create-model.js'
import type { CausalLanguageModel } from './causal-language-model.js'

beforeAll(initTestBackend)

let model: CausalLanguageModel
beforeAll(() => {
  model = createModel('tiny', { vocabSize: 50, seed: 1, overrides: { numKeyValueHeads: 2, initializerRange: 0.2 } })
})
afterAll(() => model.dispose())

describe('CausalLanguageModel', () => {
  it('holds its parameters under Hugging Face names and shapes', () => {
    const names = [...model.parameters().keys()]
    expect(names.slice(0, 5)).toEqual([
      'model.embed_tokens.weight',
      'model.layers.0.self_attn.q_proj.weight',
      'model.layers.0.self_attn.k_proj.weight',
      'model.layers.0.self_attn.v_proj.weight',
      'model.layers.0.self_attn.o_proj.weight',
    ])
    expect(names.at(-1)).toBe('model.norm.weight') // tied: no lm_head.weight
    expect(names).toHaveLength(1 + 2 * 9 + 1)
    expect(model.parameter('model.layers.1.self_attn.k_proj.weight').shape).toEqual([64, 128]) // [kvHeads · headDim, hidden]
    expect(model.parameter('model.layers.1.mlp.down_proj.weight').shape).toEqual([128, 384])
    expect(model.numParameters).toBe(50 * 128 + 2 * (128 * 128 * 2 + 64 * 128 * 2 + 3 * 128 * 384 + 2 * 128) + 128)
    expect(() => model.parameter('lm_head.weight')).toThrow(/no parameter of that name/)
  })

  it('initialises as transformers: normal(0, initializer_range), norms one; same seed, same weights', () => {
    const weight = Array.from(model.parameter('model.layers.0.mlp.up_proj.weight').dataSync())
    const mean = weight.reduce((sum, value) => sum + value, 0) / weight.length
    const deviation = Math.sqrt(weight.reduce((sum, value) => sum + (value - mean) ** 2, 0) / weight.length)
    expect(Math.abs(mean)).toBeLessThan(0.01)
    expect(deviation).toBeCloseTo(0.2, 2)
    expect(Array.from(model.parameter('model.layers.0.input_layernorm.weight').dataSync()).every((value) => value === 1)).toBe(true)
    const again = createModel('tiny', { vocabSize: 50, seed: 1, overrides: { numKeyValueHeads: 2, initializerRange: 0.2 } })
    const other = createModel('tiny', { vocabSize: 50, seed: 2, overrides: { numKeyValueHeads: 2, initializerRange: 0.2 } })
    expect(Array.from(again.parameter('model.embed_tokens.weight').dataSync())).toEqual(Array.from(model.parameter('model.embed_tokens.weight').dataSync()))
    expect(Array.from(other.parameter('model.embed_tokens.weight').dataSync())).not.toEqual(Array.from(model.parameter('model.embed_tokens.weight').dataSync()))
    again.dispose()
    other.dispose()
  })

  it("zeroes the padding token's embedding row", () => {
    const padded = createModel('tiny', { vocabSize: 20, seed: 3, overrides: { padTokenId: 4, numHiddenLayers: 1 } })
    const row = tf.tidy(() => tf.slice(padded.parameter('model.embed_tokens.weight'), [4, 0], [1, 128]).dataSync())
    expect(Array.from(row).every((value) => value === 0)).toBe(true)
    padded.dispose()
  })

  it('forward gives [batch, time, vocab] logits and leaves numTensors unchanged', async () => {
    const logits = model.forward([
      [1, 2, 3],
      [4, 5, 6],
    ])
    expect(logits.shape).toEqual([2, 3, 50])
    expect(logits.dtype).toBe('float32')
    logits.dispose()
    const ids = tf.tensor2d([[1, 2, 3, 4]], [1, 4], 'int32')
    await expectNoLeaks(() => model.forward(ids, { attentionMask: [[0, 1, 1, 1]] }), { label: 'forward' })
    ids.dispose()
  })

  it('a causal model: later tokens do not change earlier logits', () => {
    const short = model.forward([[7, 8, 9]])
    const long = model.forward([[7, 8, 9, 10, 11]])
    const prefix = tf.slice(long, [0, 0, 0], [1, 3, 50])
    expect(tf.max(tf.abs(tf.sub(prefix, short))).dataSync()[0]).toBeLessThan(1e-5)
    tf.dispose([short, long, prefix])
  })

  it('left padding with a mask gives the unpadded logits', () => {
    const plain = model.forward([[7, 8, 9]])
    const padded = model.forward([[0, 0, 7, 8, 9]], { attentionMask: [[0, 0, 1, 1, 1]] })
    const tail = tf.slice(padded, [0, 2, 0], [1, 3, 50])
    expect(tf.max(tf.abs(tf.sub(tail, plain))).dataSync()[0]).toBeLessThan(1e-5)
    tf.dispose([plain, padded, tail])
  })

  it('the cached path equals the full forward', () => {
    const ids = [
      [3, 1, 4, 1, 5, 9, 2, 6],
      [0, 0, 0, 2, 7, 1, 8, 2],
    ]
    const mask = [
      [1, 1, 1, 1, 1, 1, 1, 1],
      [0, 0, 0, 1, 1, 1, 1, 1],
    ]
    const full = model.forward(ids, { attentionMask: mask })
    const cache = model.createCache()
    const pieces = [
      model.forward(
        ids.map((row) => row.slice(0, 4)),
        { attentionMask: mask.map((row) => row.slice(0, 4)), cache },
      ),
    ]
    for (const [start, end] of [
      [4, 5],
      [5, 8],
    ] as const) {
      pieces.push(
        model.forward(
          ids.map((row) => row.slice(start, end)),
          { attentionMask: mask.map((row) => row.slice(0, end)), cache },
        ),
      )
    }
    expect(cache.length).toBe(8)
    const cached = tf.concat(pieces, 1)
    // Padded positions attend to nothing: their logits are meaningless, so only attended ones are compared.
    const attended = tf.tensor3d(mask.flat(), [2, 8, 1])
    const error = tf.tidy(() => tf.div(tf.max(tf.mul(tf.abs(tf.sub(cached, full)), attended)), tf.max(tf.abs(full))).dataSync()[0]!)
    attended.dispose()
    expect(error).toBeLessThan(1e-4)
    tf.dispose([full, cached, ...pieces])
    cache.dispose()
  })

  it('rejects bad input naming the argument and the value', () => {
    expect(() => model.forward([[1, 50]])).toThrow(InvalidArgumentError)
    expect(() => model.forward([[1, 50]])).toThrow(/inputIds\[0\]\[1\].*value: 50.*\[0, 50\)/)
    expect(() => model.forward([[1, -1]])).toThrow(/inputIds\[0\]\[1\]/)
    expect(() => model.forward([[1.5]])).toThrow(/must be an integer/)
    expect(() => model.forward([[1, 2], [3]])).toThrow(ShapeError)
    const floats = tf.tensor2d([[1, 2]])
    expect(() => model.forward(floats)).toThrow(/'inputIds'.*float32.*int32/)
    floats.dispose()
    const vector = tf.tensor1d([1, 2], 'int32')
    expect(() => model.forward(vector)).toThrow(ShapeError)
    vector.dispose()
    expect(() => model.forward([[1, 2]], { attentionMask: [[1, 1, 1]] })).toThrow(/Shape of 'attentionMask' is \[1, 3\], expected \[1, 2\]/)
    expect(() => model.forward([[1, 2]], { attentionMask: [[1, 2]] })).toThrow(/attentionMask\[0\]\[1\]/)
    expect(() => model.forward([[1, 2]], { positions: [[0]] })).toThrow(/positions/)
    expect(() => model.forward([[1, 2]], { cache: {} as never })).toThrow(/options\.cache.*KeyValueCache/)
    expect(() => model.forward([[1, 2]], { atentionMask: [[1, 1]] } as never)).toThrow(/options/)
  })

  it('freezes and unfreezes parameters by name pattern', () => {
    const frozen = model.freeze(/embed_tokens|layers\.0\./)
    expect(frozen).toContain('model.embed_tokens.weight')
    expect(frozen).toHaveLength(1 + 9)
    const trainable = [...model.trainableParameters().keys()]
    expect(trainable).not.toContain('model.layers.0.mlp.up_proj.weight')
    expect(trainable).toContain('model.layers.1.mlp.up_proj.weight')
    expect(model.unfreeze('model.**')).toHaveLength(model.parameters().size)
    expect(model.trainableParameters().size).toBe(model.parameters().size)
  })

  it('matches names with the ParameterNamePattern rule: whole-name globs, RegExps, lists; no match is an error', () => {
    try {
      expect(model.freeze('model.embed_tokens.weight')).toEqual(['model.embed_tokens.weight'])
      expect(model.freeze(['model.layers.*.self_attn.q_proj.weight', '**norm.weight'])).toEqual([
        'model.layers.0.self_attn.q_proj.weight',
        'model.layers.0.input_layernorm.weight',
        'model.layers.0.post_attention_layernorm.weight',
        'model.layers.1.self_attn.q_proj.weight',
        'model.layers.1.input_layernorm.weight',
        'model.layers.1.post_attention_layernorm.weight',
        'model.norm.weight',
      ])
      expect(model.trainableParameters().has('model.layers.0.self_attn.k_proj.weight')).toBe(true)
      expect(() => model.freeze('embed')).toThrow(InvalidArgumentError) // a string is never a substring
      expect(() => model.freeze('embed')).toThrow(/freeze: matches no parameter.*model\.embed_tokens\.weight/)
      expect(() => model.unfreeze([])).toThrow(/unfreeze: matches no parameter/)
    } finally {
      model.unfreeze('**')
    }
    expect(model.trainableParameters().size).toBe(model.parameters().size)
  })

  it('two models live side by side (unique tfjs variable names) and dispose frees everything', () => {
    const before = tf.memory().numTensors
    const other = createModel('tiny', { vocabSize: 50, seed: 1 })
    expect(other.variablePrefix).not.toBe(model.variablePrefix)
    other.dispose()
    expect(tf.memory().numTensors).toBe(before)
    expect(() => other.forward([[1]])).toThrow(/disposed/)
  })
})
