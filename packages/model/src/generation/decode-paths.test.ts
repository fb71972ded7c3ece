import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { applyLora } from '../lora/apply-lora.js'
import { createModel, type CreateModelOptions } from '../model/create-model.js'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { createRandom, deriveSeed } from '@ludic/core'
import { sequenceLogprobs } from '../sequence-logprobs.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { GenerationEngine } from './engine.js'
import { FusedDecoder } from './fused-decoder.js'
import { chooseDecodePath, generate, generateRows, type GeneratedSequence, type GenerationRow, type ModelGenerateOptions } from './generate.js'

beforeAll(initTestBackend)

/** Random weights with a wide spread, so the distributions are far from uniform; grouped-query attention. */
const sizes = { hiddenSize: 32, numAttentionHeads: 4, numKeyValueHeads: 2, intermediateSize: 64, initializerRange: 0.3 }

function tinyModel(seed: number, overrides: CreateModelOptions['overrides'] = {}): CausalLanguageModel {
  return createModel('tiny', { vocabSize: 259, seed, overrides: { ...sizes, ...overrides } })
}

/** Gives every bias (zero at creation) and LoRA B (zero at attachment) random values, so they matter. */
function randomize(model: CausalLanguageModel, pattern: RegExp, seed: number): void {
  for (const [name, variable] of model.parameters()) {
    if (pattern.test(name)) tf.tidy(() => variable.assign(tf.randomNormal(variable.shape, 0, 0.3, 'float32', seed++)))
  }
}

/** Eight prompts of different lengths (left padding), some of them repeated. */
const prompts = [[5, 9, 13, 2, 44], [7], [100, 3, 8], [1, 2, 3, 4, 5, 6, 7, 8, 9], [258, 0], [7], [40, 41], [99, 98, 97, 96]].map((row) => Int32Array.from(row))

/** The same rows on a `GenerationEngine` (each row its own sequence, seeds as `generate` derives them). */
async function engineGenerate(model: CausalLanguageModel, options: Omit<ModelGenerateOptions, 'decodePath'>): Promise<GeneratedSequence[]> {
  const engine = new GenerationEngine(model, { maxSequenceLength: 64 })
  try {
    const seeds = options.seed ?? 0
    return await Promise.all(
      options.inputIds!.map((ids, index) =>
        engine.submit({
          promptIds: Int32Array.from(ids),
          sampling: { temperature: options.temperature ?? 1, topK: options.topK ?? 0, topP: options.topP ?? 1, minP: options.minP ?? 0 },
          maxNewTokens: options.maxNewTokens ?? 32,
          stopTokenIds: new Set(options.stopTokenIds ?? []),
          stopStrings: [],
          random: createRandom(Array.isArray(seeds) ? seeds[index]! : deriveSeed(seeds, index)),
        }),
      ),
    )
  } finally {
    engine.dispose()
  }
}

/**
 * Runs `generate` on every decode path, and the rows on the generation engine, and checks each against `'layers'`:
 * same tokens and finish reasons, log-probs within 1e-4, no tensor left.
 */
async function expectPathsAgree(model: CausalLanguageModel, options: Omit<ModelGenerateOptions, 'decodePath'>): Promise<GeneratedSequence[]> {
  const before = tf.memory().numTensors
  const reference = await generate(model, { ...options, decodePath: 'layers' })
  for (const decodePath of ['fused', 'host', 'auto', 'engine'] as const) {
    const result = decodePath === 'engine' ? await engineGenerate(model, options) : await generate(model, { ...options, decodePath })
    expect(tf.memory().numTensors).toBe(before)
    expect(result.map((sequence) => [...sequence.tokenIds])).toEqual(reference.map((sequence) => [...sequence.tokenIds]))
    expect(result.map((sequence) => sequence.finishReason)).toEqual(reference.map((sequence) => sequence.finishReason))
    result.forEach((sequence, row) => {
      sequence.logprobs.forEach((logprob, index) => expect(Math.abs(logprob - reference[row]!.logprobs[index]!)).toBeLessThan(1e-4))
    })
  }
  return reference
}

describe('decode paths', () => {
  let model: CausalLanguageModel
  beforeAll(() => {
    model = tinyModel(11)
  })
  afterAll(() => model.dispose())

  it('fused and host decoding give the greedy tokens and log-probs of the layer-by-layer path, batch 1 and 8, left-padded', async () => {
    for (const inputIds of [prompts.slice(0, 1), prompts.slice(1, 2), prompts]) {
      const reference = await expectPathsAgree(model, { inputIds, maxNewTokens: 12, temperature: 0, stopTokenIds: [] })
      expect(reference.every((sequence) => sequence.tokenIds.length === 12)).toBe(true)
    }
  })

  it('agree when stop tokens end some rows early (their later positions masked)', async () => {
    const free = await generate(model, { inputIds: prompts, maxNewTokens: 10, temperature: 0, stopTokenIds: [] })
    // A stop id that occurs mid-way in row 0 but not in some other row: row 0 finishes early, that one runs on.
    const stop = [...free[0]!.tokenIds.slice(1)].find((token) => free.some((sequence) => !sequence.tokenIds.includes(token)))
    expect(stop).toBeDefined()
    const stops = [stop!]
    const reference = await expectPathsAgree(model, { inputIds: prompts, maxNewTokens: 10, temperature: 0, stopTokenIds: stops })
    expect(reference.some((sequence) => sequence.finishReason === 'stop')).toBe(true)
    expect(reference.some((sequence) => sequence.finishReason === 'length')).toBe(true)
  })

  it('agree when sampling with a seed (temperature, top-k, top-p, min-p)', async () => {
    await expectPathsAgree(model, { inputIds: prompts, maxNewTokens: 10, temperature: 1, seed: 3, stopTokenIds: [] })
    await expectPathsAgree(model, {
      inputIds: prompts,
      maxNewTokens: 10,
      temperature: 0.7,
      topK: 20,
      topP: 0.9,
      minP: 0.05,
      seed: [1, 2, 3, 4, 5, 6, 7, 8],
      stopTokenIds: [],
    })
  })

  it('apply attached, unmerged LoRA adapters (every projection) as the layer-by-layer path does', async () => {
    const adapted = tinyModel(12)
    try {
      const adapters = applyLora(adapted, { rank: 4, alpha: 8, targetModules: 'all-linear', seed: 2 })
      randomize(adapted, /lora_B/, 40)
      const plain = await generate(adapted, { inputIds: prompts, maxNewTokens: 8, temperature: 0, stopTokenIds: [], decodePath: 'layers' })
      const reference = await expectPathsAgree(adapted, { inputIds: prompts, maxNewTokens: 8, temperature: 0, stopTokenIds: [] })
      expect(reference).toEqual(plain)
      adapters.merge()
      await expectPathsAgree(adapted, { inputIds: prompts, maxNewTokens: 8, temperature: 0, stopTokenIds: [] })
      // The adapters change the model: the base model alone decodes other tokens.
      adapters.remove()
      const base = await generate(adapted, { inputIds: prompts, maxNewTokens: 8, temperature: 0, stopTokenIds: [], decodePath: 'fused' })
      expect(base.map((sequence) => [...sequence.tokenIds])).not.toEqual(reference.map((sequence) => [...sequence.tokenIds]))
    } finally {
      adapted.dispose()
    }
  })

  it('agree with projection and MLP biases (Qwen2 style) and an untied output projection', async () => {
    const biased = tinyModel(13, { attentionBias: true, attentionOutputBias: true, mlpBias: true, tieWordEmbeddings: false })
    try {
      randomize(biased, /\.bias$/, 70)
      await expectPathsAgree(biased, { inputIds: prompts, maxNewTokens: 8, temperature: 0, stopTokenIds: [] })
    } finally {
      biased.dispose()
    }
  })

  it("the generation engine gives the layer-by-layer path's tokens and log-probs for Qwen3's query/key norms and Mistral's sliding window", async () => {
    const qwen3 = tinyModel(15, { architecture: 'qwen3', queryKeyNorm: true, attentionBias: false })
    const mistral = tinyModel(16, { architecture: 'mistral', slidingWindow: 4 })
    try {
      randomize(qwen3, /_norm\.weight$/, 90) // q_norm and k_norm start at one: make them matter
      for (const model of [qwen3, mistral]) {
        for (const options of [
          { inputIds: prompts, maxNewTokens: 10, temperature: 0, stopTokenIds: [] },
          { inputIds: prompts, maxNewTokens: 10, temperature: 0.9, topK: 30, seed: 5, stopTokenIds: [] },
        ]) {
          const reference = await generate(model, { ...options, decodePath: 'layers' })
          const result = await engineGenerate(model, options)
          expect(result.map((sequence) => [...sequence.tokenIds])).toEqual(reference.map((sequence) => [...sequence.tokenIds]))
          result.forEach((sequence, row) =>
            sequence.logprobs.forEach((logprob, index) => expect(Math.abs(logprob - reference[row]!.logprobs[index]!)).toBeLessThan(1e-4)),
          )
        }
      }
      // The window matters: the same weights without it decode otherwise.
      const unwindowed = tinyModel(16, { architecture: 'mistral', slidingWindow: null })
      try {
        const options = { inputIds: prompts, maxNewTokens: 10, temperature: 0, stopTokenIds: [] }
        const [windowed, plain] = [await engineGenerate(mistral, options), await engineGenerate(unwindowed, options)]
        expect(windowed.map((sequence) => [...sequence.tokenIds])).not.toEqual(plain.map((sequence) => [...sequence.tokenIds]))
      } finally {
        unwindowed.dispose()
      }
    } finally {
      qwen3.dispose()
      mistral.dispose()
    }
  })

  it("'auto' decodes small models on the host on CPU backends, and not where the weights and cache would pass 1 GiB", () => {
    expect(chooseDecodePath(model, 8, 100)).toBe('host')
    expect(chooseDecodePath(model, 4096, 2048)).toBe('fused') // 4096 rows × 2048 positions of keys and values
  })

  it("'host' refuses a batch whose keys and values would pass a WebAssembly memory's 4 GiB, before allocating", async () => {
    const before = tf.memory().numTensors
    const wide = Array.from({ length: 60_000 }, () => Int32Array.of(1, 2, 3))
    await expect(generate(model, { inputIds: wide, maxNewTokens: 2045, decodePath: 'host' })).rejects.toThrow(/4 GiB/)
    expect(tf.memory().numTensors).toBe(before)
  })

  it("the fused decoder refuses a position past GPT-2's learned ones (a RangeError, not a gather past the table), and frees what it made", () => {
    const model = createModel('tiny', {
      vocabSize: 97,
      seed: 2,
      overrides: { architecture: 'gpt2', hiddenSize: 32, numAttentionHeads: 4, maxPositionEmbeddings: 8 },
    })
    const before = tf.memory().numTensors
    const decoder = new FusedDecoder(model)
    const cache = model.createCache()
    try {
      tf.dispose(model.hiddenStates([[1, 2, 3, 4, 5, 6, 7]], { cache }))
      decoder.adoptCache(cache)
      const logits = decoder.step(Int32Array.of(5), Int32Array.of(7), undefined)
      expect(logits.shape).toEqual([1, 97])
      logits.dispose()
      expect(() => decoder.step(Int32Array.of(5), Int32Array.of(8), undefined)).toThrow(/FusedDecoder: position 8, past the learned positions 0 … 7/)
    } finally {
      cache.dispose()
      decoder.dispose()
    }
    expect(tf.memory().numTensors).toBe(before)
    model.dispose()
  })

  it("'fused' and 'host' refuse a generation past a sliding window, by decodePath; 'fused' runs GPT-2 and Qwen3's query/key norms; 'auto' runs GPT-2 on the host", async () => {
    const gpt2 = createModel('tiny', { vocabSize: 259, seed: 14, overrides: { architecture: 'gpt2', hiddenSize: 32, intermediateSize: 64 } })
    const qwen3 = tinyModel(15, { architecture: 'qwen3', queryKeyNorm: true, attentionBias: false })
    const mistral = tinyModel(16, { architecture: 'mistral', slidingWindow: 4 })
    const options = { inputIds: prompts.slice(0, 2), maxNewTokens: 3, temperature: 0, stopTokenIds: [] }
    try {
      await expect(generate(mistral, { ...options, decodePath: 'fused' })).rejects.toMatchObject({
        argument: 'decodePath',
        value: 'fused',
        message: expect.stringMatching(/fused decoder cannot run past the sliding window \(4 positions/),
      })
      for (const model of [gpt2, qwen3]) {
        const layers = await generate(model, { ...options, decodePath: 'layers' })
        const fused = await generate(model, { ...options, decodePath: 'fused' })
        expect(fused.map((sequence) => [...sequence.tokenIds])).toEqual(layers.map((sequence) => [...sequence.tokenIds]))
      }
      await expect(generate(mistral, { ...options, decodePath: 'host' })).rejects.toMatchObject({
        argument: 'decodePath',
        value: 'host',
        message: expect.stringMatching(/host decoder cannot run mistral past its sliding window \(4 positions/),
      })
      expect(chooseDecodePath(gpt2, 2, 10)).toBe('host')
      expect(chooseDecodePath(mistral, 2, 10)).toBe('layers')
      const layers = await generate(gpt2, { ...options, decodePath: 'layers' })
      for (const decodePath of ['auto', 'host'] as const) {
        const result = await generate(gpt2, { ...options, decodePath })
        expect(result.map((sequence) => [...sequence.tokenIds])).toEqual(layers.map((sequence) => [...sequence.tokenIds]))
      }
    } finally {
      gpt2.dispose()
      qwen3.dispose()
      mistral.dispose()
    }
  })

  it('an abort stops the fused and host paths at a decode step, every tensor freed', async () => {
    for (const decodePath of ['fused', 'host'] as const) {
      const before = tf.memory().numTensors
      const controller = new AbortController()
      let pieces = 0
      const { createByteTokenizer } = await import('@ludic/core/test')
      const run = generate(model, {
        inputIds: prompts,
        maxNewTokens: 200,
        temperature: 1,
        stopTokenIds: [],
        tokenizer: createByteTokenizer(),
        signal: controller.signal,
        decodePath,
        onText: () => {
          if (++pieces === 3) controller.abort(new Error('enough'))
        },
      })
      await expect(run).rejects.toThrow('enough')
      expect(tf.memory().numTensors).toBe(before)
    }
  })
})

/** `log softmax(logits / T)` of each response token, from one unpadded forward pass over prompt + response (no cache). */
function temperedForward(model: CausalLanguageModel, prompt: Int32Array, response: Int32Array, temperature: number): number[] {
  return tf.tidy(() => {
    const logits = model.forward([[...prompt, ...response]]) // [1, time, vocab]
    const logProbabilities = tf.logSoftmax(tf.div(logits, temperature)).arraySync() as number[][][]
    return Array.from(response, (token, step) => logProbabilities[0]![prompt.length - 1 + step]![token]!)
  })
}

/** The largest |recorded − expected| over every token of every row. */
function largestDifference(recorded: readonly Float32Array[], expected: readonly ArrayLike<number>[]): number {
  let largest = 0
  recorded.forEach((row, index) => {
    expect(row.length).toBe(expected[index]!.length)
    row.forEach((value, step) => {
      largest = Math.max(largest, Math.abs(value - expected[index]![step]!))
    })
  })
  return largest
}

/*
 * One rule for every recorded log-prob: log softmax(logits / T), T the row's sampling temperature (top-k/top-p/min-p
 * not applied, as verl's and TRL's training forwards). The weights here have a spread of 0.1: distributions far from
 * uniform (the tokens sampled at T = 0.5 have log-probs from −5.0 to −0.99, up to 1.96 from T = 1's). With the 0.3 of the tests
 * above, logits several times larger, the fused and host paths' float32 rounding alone reaches 6.7e-6 at T = 1 and
 * 1.6e-5 at T = 0.5 (the layers path 1.7e-6 and 3.6e-6; see the README).
 */
describe('recorded log-probs: the sampling distribution on every decode path', () => {
  let model: CausalLanguageModel
  beforeAll(() => {
    model = createModel('tiny', { vocabSize: 259, seed: 11, overrides: { ...sizes, initializerRange: 0.1 } })
  })
  afterAll(() => model.dispose())

  it("record the sampling distribution's log-probs on every path: at temperature 0.5, log softmax(logits / 0.5) of a training forward, within 1e-5", async () => {
    const temperature = 0.5
    for (const decodePath of ['layers', 'fused', 'host'] as const) {
      const before = tf.memory().numTensors
      const results = await generate(model, { inputIds: prompts, maxNewTokens: 10, temperature, topK: 40, topP: 0.95, seed: 21, stopTokenIds: [], decodePath })
      const recorded = results.map((result) => result.logprobs)
      // The trainer's forward: sequenceLogprobs at the sampling temperature, over the padded batch.
      const { logprobs, responseMask } = sequenceLogprobs(model, { promptIds: prompts, responseIds: results.map((result) => result.tokenIds) }, { temperature })
      const training = (logprobs.arraySync() as number[][]).map((row, index) => row.slice(0, results[index]!.tokenIds.length))
      tf.dispose([logprobs, responseMask])
      const difference = largestDifference(recorded, training)
      // The figure the trainer logs as logprobDiff/max (rollout vs training forward), per path and backend.
      console.log(`logprobDiff/max at T = 0.5, ${decodePath} decode path, ${tf.getBackend()} backend: ${difference.toExponential(2)}`)
      expect(difference, `${decodePath}: against sequenceLogprobs`).toBeLessThan(1e-5)
      // And an explicit one: log softmax(logits / T) of a plain forward pass per sequence.
      const explicit = results.map((result, index) => temperedForward(model, prompts[index]!, result.tokenIds, temperature))
      expect(largestDifference(recorded, explicit), `${decodePath}: against log softmax(logits / T)`).toBeLessThan(1e-5)
      // Not temperature 1's: the rule changes the figures.
      const untempered = results.map((result, index) => temperedForward(model, prompts[index]!, result.tokenIds, 1))
      expect(largestDifference(recorded, untempered)).toBeGreaterThan(1e-2)
      expect(tf.memory().numTensors).toBe(before)
    }
  })

  it('record each row at its own temperature in one batch (greedy rows: temperature 1), on every path', async () => {
    const temperatures = [0.5, 1, 2, 0, 0.25, 1.5, 0, 0.8]
    const rows = (): GenerationRow[] =>
      prompts.map((promptIds, index) => ({
        promptIds,
        sampling: { temperature: temperatures[index]!, topK: 0, topP: 1, minP: 0 },
        maxNewTokens: 6,
        stopTokenIds: new Set<number>(),
        stopStrings: [],
        random: createRandom(100 + index),
      }))
    for (const decodePath of ['layers', 'fused', 'host'] as const) {
      const results = await generateRows(model, rows(), undefined, { decodePath })
      const expected = results.map((result, index) =>
        temperedForward(model, prompts[index]!, result.tokenIds, temperatures[index]! === 0 ? 1 : temperatures[index]!),
      )
      expect(
        largestDifference(
          results.map((result) => result.logprobs),
          expected,
        ),
        decodePath,
      ).toBeLessThan(1e-5)
    }
  })
})
