import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createModel } from '../model/create-model.js'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { generate, type ModelGenerateOptions } from './generate.js'

beforeAll(initTestBackend)

/** Eight prompts of different lengths (left padding). */
const prompts = [[5, 9, 13, 2, 44], [7], [100, 3, 8], [1, 2, 3, 4, 5, 6, 7, 8, 9], [258, 0], [7], [40, 41], [99, 98, 97, 96]].map((row) => Int32Array.from(row))

describe('generate: decodeThreads', () => {
  let model: CausalLanguageModel
  beforeAll(() => {
    // Wide enough that at batch 8 every weight product passes the size at which it is shared with a worker.
    model = createModel('tiny', {
      vocabSize: 259,
      seed: 21,
      overrides: { hiddenSize: 128, numAttentionHeads: 4, numKeyValueHeads: 2, intermediateSize: 512, initializerRange: 0.3 },
    })
  })
  afterAll(() => model.dispose())

  const options: ModelGenerateOptions = { inputIds: prompts, maxNewTokens: 24, temperature: 1, seed: 5, stopTokenIds: [], decodePath: 'host' }

  it('two threads (and auto) decode the tokens and log-probs of one thread exactly, batch 8 and 1, no tensor left', async () => {
    const before = tf.memory().numTensors
    const single = await generate(model, { ...options, decodeThreads: 1 })
    for (let round = 0; round < 3; round++) {
      expect(await generate(model, { ...options, decodeThreads: 2 })).toEqual(single)
      expect(await generate(model, { ...options, decodeThreads: 'auto' })).toEqual(single)
    }
    const stopped = await generate(model, { ...options, stopTokenIds: [single[0]!.tokenIds[3]!], decodeThreads: 1 })
    expect(await generate(model, { ...options, stopTokenIds: [single[0]!.tokenIds[3]!], decodeThreads: 2 })).toEqual(stopped)
    const one = { ...options, inputIds: prompts.slice(3, 4), maxNewTokens: 8 }
    expect(await generate(model, { ...one, decodeThreads: 2 })).toEqual(await generate(model, { ...one, decodeThreads: 1 }))
    expect(tf.memory().numTensors).toBe(before)
  })

  it('an abort stops a two-thread generation at a decode step; the next one still decodes what one thread does', async () => {
    const before = tf.memory().numTensors
    const { createByteTokenizer } = await import('@ludic/core/test')
    const controller = new AbortController()
    let pieces = 0
    const run = generate(model, {
      ...options,
      maxNewTokens: 200,
      tokenizer: createByteTokenizer(),
      signal: controller.signal,
      decodeThreads: 2,
      onText: () => {
        if (++pieces === 3) controller.abort(new Error('enough'))
      },
    })
    await expect(run).rejects.toThrow('enough')
    expect(tf.memory().numTensors).toBe(before)
    expect(await generate(model, { ...options, decodeThreads: 2 })).toEqual(await generate(model, { ...options, decodeThreads: 1 }))
  })

  it('refuses a thread count that is not a whole number from 1 to 64', async () => {
    for (const decodeThreads of [0, 65, 1.5, 'many']) {
      await expect(generate(model, { ...options, decodeThreads: decodeThreads as number })).rejects.toThrow(InvalidArgumentError)
    }
  })
})
