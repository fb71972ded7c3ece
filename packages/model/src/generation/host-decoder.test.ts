import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { applyLora } from '../lora/apply-lora.js'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { createModel } from '../model/create-model.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { generate, type ModelGenerateOptions } from './generate.js'
import { backendProduct, copiedHostWeightFloats, HostDecoder, hostDecoderFloats, hostWeightCopyCount, hostWeightFloats } from './host-decoder.js'

beforeAll(initTestBackend)

const prompts = [[5, 9, 13, 2, 44], [7], [100, 3, 8]].map((row) => Int32Array.from(row))
const greedy: Omit<ModelGenerateOptions, 'decodePath'> = { inputIds: prompts, maxNewTokens: 6, temperature: 0, stopTokenIds: [] }

/** The host path's tokens and log-probs, checked against the layer-by-layer path on the model as it is now. */
async function hostAgreesWithLayers(model: CausalLanguageModel, options = greedy): Promise<number[][]> {
  const reference = await generate(model, { ...options, decodePath: 'layers' })
  const host = await generate(model, { ...options, decodePath: 'host' })
  expect(host.map((sequence) => [...sequence.tokenIds])).toEqual(reference.map((sequence) => [...sequence.tokenIds]))
  host.forEach((sequence, row) =>
    sequence.logprobs.forEach((logprob, index) => expect(Math.abs(logprob - reference[row]!.logprobs[index]!)).toBeLessThan(1e-4)),
  )
  return host.map((sequence) => [...sequence.tokenIds])
}

function randomize(model: CausalLanguageModel, pattern: RegExp, seed: number): void {
  for (const [name, variable] of model.parameters()) {
    if (pattern.test(name)) tf.tidy(() => variable.assign(tf.randomNormal(variable.shape, 0, 0.3, 'float32', seed++)))
  }
}

describe("the host decoder's weights, kept between generations", () => {
  let model: CausalLanguageModel
  beforeAll(() => {
    model = createModel('tiny', {
      vocabSize: 259,
      seed: 3,
      overrides: { hiddenSize: 32, numAttentionHeads: 4, numKeyValueHeads: 2, intermediateSize: 64, initializerRange: 0.3 },
    })
  })
  afterAll(() => model.dispose())

  it('are copied once for a run of generations, and again when a parameter changes (an optimizer step assigns new data)', async () => {
    const before = tf.memory().numTensors
    await hostAgreesWithLayers(model)
    const copies = hostWeightCopyCount()
    for (let index = 0; index < 3; index++) await generate(model, { ...greedy, decodePath: 'host' })
    expect(hostWeightCopyCount()).toBe(copies)
    const old = await hostAgreesWithLayers(model)
    randomize(model, /layers\.1\.mlp\.down_proj/, 7)
    const changed = await hostAgreesWithLayers(model)
    expect(hostWeightCopyCount()).toBe(copies + 1)
    expect(changed).not.toEqual(old)
    expect(tf.memory().numTensors).toBe(before)
  })

  it('follow an adapter attached, trained, merged, unmerged and removed', async () => {
    const plain = await hostAgreesWithLayers(model)
    const adapters = applyLora(model, { rank: 2, targetModules: ['q_proj', 'v_proj', 'gate_proj'] })
    expect(await hostAgreesWithLayers(model)).toEqual(plain) // B starts at zero
    randomize(model, /lora_B/, 11)
    const adapted = await hostAgreesWithLayers(model)
    expect(adapted).not.toEqual(plain)
    adapters.merge()
    expect(await hostAgreesWithLayers(model)).toEqual(adapted)
    adapters.unmerge()
    expect(await hostAgreesWithLayers(model)).toEqual(adapted)
    adapters.remove()
    expect(await hostAgreesWithLayers(model)).toEqual(plain)
  })

  it('are copied again into a larger arena when a generation needs more room, and stay right for smaller ones after', async () => {
    await hostAgreesWithLayers(model)
    const copies = hostWeightCopyCount()
    const wide = {
      ...greedy,
      inputIds: Array.from({ length: 24 }, (_, row) => Int32Array.from({ length: 30 + row }, (_, index) => (row * 31 + index) % 259)),
      maxNewTokens: 40,
    }
    await hostAgreesWithLayers(model, wide)
    expect(hostWeightCopyCount()).toBe(copies + 1)
    await hostAgreesWithLayers(model)
    await hostAgreesWithLayers(model, wide)
    expect(hostWeightCopyCount()).toBe(copies + 1)
  })

  it('serve one generation at a time: a concurrent one gets its own copy, and both are right', async () => {
    const long = { ...greedy, maxNewTokens: 200 }
    const reference = await generate(model, { ...long, decodePath: 'layers' })
    const copies = hostWeightCopyCount()
    const results = await Promise.all([generate(model, { ...long, decodePath: 'host' }), generate(model, { ...long, decodePath: 'host' })])
    for (const result of results) expect(result.map((sequence) => [...sequence.tokenIds])).toEqual(reference.map((sequence) => [...sequence.tokenIds]))
    expect(hostWeightCopyCount()).toBeLessThanOrEqual(copies + 1)
  })
})

describe('HostDecoder.prefill', () => {
  it("gives the logits, keys and values of model.hiddenStates' prefill: left padding, grouped-query attention, biases, an unmerged adapter", async () => {
    const model = createModel('tiny', {
      vocabSize: 259,
      seed: 5,
      overrides: { hiddenSize: 32, numAttentionHeads: 4, numKeyValueHeads: 2, intermediateSize: 64, initializerRange: 0.3, attentionBias: true },
    })
    applyLora(model, { rank: 2, targetModules: ['q_proj', 'down_proj'] })
    randomize(model, /bias|lora_B/, 21)
    const before = tf.memory().numTensors
    const rows = [[5, 9, 13, 2, 44, 7, 1], [7], [100, 3, 8], [258, 0, 4, 4, 4, 4]]
    const length = Math.max(...rows.map((row) => row.length))
    const inputRows = rows.map((row) => Int32Array.from([...Array(length - row.length).fill(0), ...row]))
    const maskRows = rows.map((row) => Int32Array.from({ length }, (_, index) => (index >= length - row.length ? 1 : 0)))
    const capacity = length + 3
    // The reference: the model's own prefill, its cache adopted by a host decoder.
    const cache = model.createCache()
    const logits = tf.tidy(() => {
      const hidden = model.hiddenStates(inputRows, { attentionMask: maskRows, cache })
      return model.logitsFromHidden(tf.slice(hidden, [0, length - 1, 0], [rows.length, 1, 32]) as tf.Tensor3D)
    })
    const expected = (await logits.data()) as Float32Array
    logits.dispose()
    const adopted = new HostDecoder(model, rows.length, capacity)
    adopted.adoptCache(cache)
    cache.dispose()
    const prefilled = new HostDecoder(model, rows.length, capacity, { prefillLength: length })
    try {
      const got = prefilled.prefill(inputRows, maskRows)
      got.forEach((value, index) => expect(Math.abs(value - expected[index]!)).toBeLessThan(1e-4))
      // A step after each: the same logits, so the same keys and values were left behind (padding slots masked).
      const tokens = Int32Array.from([3, 250, 17, 9])
      const positions = Int32Array.from(rows, (row) => row.length)
      const padding = new Float32Array(rows.length * (length + 1))
      maskRows.forEach((mask, row) => mask.forEach((value, index) => (padding[row * (length + 1) + index] = value === 0 ? -1e9 : 0)))
      const next = prefilled.step(tokens, positions, padding)
      const reference = adopted.step(tokens, positions, padding)
      next.forEach((value, index) => expect(Math.abs(value - reference[index]!)).toBeLessThan(1e-4))
      expect(() =>
        prefilled.prefill(
          inputRows.map((row) => Int32Array.from([...row, 1])),
          maskRows,
        ),
      ).toThrow(RangeError)
    } finally {
      adopted.dispose()
      prefilled.dispose()
    }
    expect(tf.memory().numTensors).toBe(before)
    model.dispose()
  })
})

describe('the host weights of every architecture', () => {
  it("hostWeightFloats is exactly what the copy takes (q, k, v and gate, up stacked, each buffer rounded up to 4 floats; room for an untied head's bias)", () => {
    for (const overrides of [
      { hiddenSize: 30, numAttentionHeads: 3, numKeyValueHeads: 1, intermediateSize: 45 },
      { hiddenSize: 30, numAttentionHeads: 3, intermediateSize: 45, tieWordEmbeddings: false, attentionBias: true, attentionOutputBias: true, mlpBias: true },
      { architecture: 'qwen2', hiddenSize: 32, numAttentionHeads: 4, numKeyValueHeads: 2, intermediateSize: 48, attentionBias: true },
      { architecture: 'qwen3', hiddenSize: 32, numAttentionHeads: 4, numKeyValueHeads: 2, headDim: 6, intermediateSize: 48, queryKeyNorm: true },
      { architecture: 'mistral', hiddenSize: 32, numAttentionHeads: 4, intermediateSize: 48, slidingWindow: 64 },
      { architecture: 'gpt2', hiddenSize: 30, numAttentionHeads: 3, intermediateSize: 45, tieWordEmbeddings: false, maxPositionEmbeddings: 37 },
    ]) {
      const model = createModel('tiny', { vocabSize: 97, seed: 3, overrides })
      try {
        const untied = model.config.tieWordEmbeddings ? 0 : Math.ceil(97 / 4) * 4 // the head bias's room, unused here
        expect(hostWeightFloats(model.config)).toBe(copiedHostWeightFloats(model) + untied)
        if (untied > 0) {
          // Given one, the head's bias is copied into that room, and the host path decodes.
          model.addParameter('lm_head.bias', tf.randomNormal([97], 0, 1, 'float32', 4))
          expect(hostWeightFloats(model.config)).toBe(copiedHostWeightFloats(model))
          new HostDecoder(model, 3, 17, { simd: false, prefillLength: 5 }).dispose()
        }
      } finally {
        model.dispose()
      }
    }
  })
})

describe("GPT-2's host weights", () => {
  it('are every parameter once, each buffer rounded up to 4 floats (tied and untied head, widths not multiples of 4), and the arena holds them', () => {
    for (const overrides of [
      { hiddenSize: 32, numAttentionHeads: 4, intermediateSize: 64 },
      { hiddenSize: 30, numAttentionHeads: 3, intermediateSize: 45, tieWordEmbeddings: false, maxPositionEmbeddings: 37 },
    ]) {
      const model = createModel('tiny', { vocabSize: 97, seed: 2, overrides: { architecture: 'gpt2', ...overrides } })
      try {
        let floats = model.config.tieWordEmbeddings ? 0 : Math.ceil(97 / 4) * 4 // room for a head bias, which GPT-2 does not have
        for (const [, tensor] of model.parameters()) floats += Math.ceil(tensor.size / 4) * 4
        expect(hostWeightFloats(model.config)).toBe(floats)
        // Without the kernel the arena is exactly `hostDecoderFloats` (64 bytes over): a count short of the buffers throws here.
        const decoder = new HostDecoder(model, 3, 17, { simd: false, prefillLength: 5 })
        decoder.dispose()
        expect(hostDecoderFloats(model.config, 3, 17, 5)).toBeGreaterThan(floats)
      } finally {
        model.dispose()
      }
    }
  })

  it('refuse a position past the learned ones (a RangeError, not a read past the table)', () => {
    const model = createModel('tiny', {
      vocabSize: 97,
      seed: 2,
      overrides: { architecture: 'gpt2', hiddenSize: 32, numAttentionHeads: 4, maxPositionEmbeddings: 8 },
    })
    const decoder = new HostDecoder(model, 1, 12, { prefillLength: 4 })
    try {
      decoder.extend([{ slot: 0, tokens: Int32Array.of(1, 2, 3, 4), start: 0 }])
      expect(decoder.stepRows(Int32Array.of(0), Int32Array.of(5), Int32Array.of(7)).every(Number.isFinite)).toBe(true)
      expect(() => decoder.stepRows(Int32Array.of(0), Int32Array.of(5), Int32Array.of(8))).toThrow(/position 8, past GPT-2's learned positions 0 … 7/)
    } finally {
      decoder.dispose()
      model.dispose()
    }
  })
})

describe('backendProduct', () => {
  // Products whose result for a row depends on the row count, or on the row's place, as a backend's matrix product may
  // (oneDNN on AVX2): every row's result must still be what it is alone (given twice), bit for bit.
  const columns = 5
  const values = Float32Array.from({ length: 7 * columns }, (_, index) => Math.sin(index))
  const alone = (product: (input: tf.Tensor2D) => tf.Tensor, row: number): number[] => {
    const values2 = new Float32Array(2 * columns)
    values2.set(values.subarray(row * columns, (row + 1) * columns))
    values2.set(values.subarray(row * columns, (row + 1) * columns), columns)
    return tf.tidy(() =>
      Array.from(
        product(tf.tensor2d(values2, [2, columns]))
          .dataSync()
          .slice(0, 3),
      ),
    )
  }
  const byCount = (input: tf.Tensor2D) => tf.add(tf.matMul(input, tf.ones([columns, 3])), tf.scalar(input.shape[0] === 2 ? 0 : 0.25))
  const byPlace = (input: tf.Tensor2D) => tf.add(tf.matMul(input, tf.ones([columns, 3])), tf.mul(tf.reshape(tf.range(0, input.shape[0]), [-1, 1]), 0.25))
  const plain = (input: tf.Tensor2D) => tf.matMul(input, tf.ones([columns, 3]))

  it.each([
    ['on the row count', byCount],
    ['on the row’s place', byPlace],
    ['on nothing', plain],
  ])('gives each row its result alone, bit for bit, where the product depends %s; no tensor left', (_, product) => {
    const key = tf.scalar(0)
    const before = tf.memory().numTensors
    for (const batch of [1, 2, 3, 7, 3]) {
      const out = new Float32Array(batch * 3)
      backendProduct(key, product, values, batch, columns, out)
      for (let row = 0; row < batch; row++) expect(Array.from(out.subarray(row * 3, row * 3 + 3))).toEqual(alone(product, row))
    }
    expect(tf.memory().numTensors).toBe(before)
    key.dispose()
  })
})
