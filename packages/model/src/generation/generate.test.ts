import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'
import { createByteTokenizer } from '@ludic/core/test'
import { expectNoLeaks } from '@ludic/tensors/test'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createModel } from '../model/create-model.js'
import { generate } from './generate.js'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { sequenceLogprobs } from '../sequence-logprobs.js'
import { initTestBackend } from '../test/init-test-backend.js'

beforeAll(initTestBackend)

let model: CausalLanguageModel
beforeAll(() => {
  // Random weights with a wide spread, so the distributions are far from uniform.
  model = createModel('tiny', {
    vocabSize: 259,
    seed: 11,
    overrides: { hiddenSize: 32, numAttentionHeads: 4, numKeyValueHeads: 2, intermediateSize: 64, initializerRange: 0.3 },
  })
})
afterAll(() => model.dispose())

const prompts = [Int32Array.of(5, 9, 13, 2, 44), Int32Array.of(7), Int32Array.of(100, 3, 8)]

describe('generate', () => {
  it('greedy decoding is deterministic and equals the argmax of full forward passes', async () => {
    const first = await generate(model, { inputIds: prompts, maxNewTokens: 6, temperature: 0, stopTokenIds: [] })
    const second = await generate(model, { inputIds: prompts, maxNewTokens: 6, temperature: 0, stopTokenIds: [] })
    expect(second).toEqual(first)
    for (const [index, result] of first.entries()) {
      // Recompute without cache or padding: one sequence at a time.
      const sequence = [...prompts[index]!]
      for (const token of result.tokenIds) {
        const logits = model.forward([sequence])
        const best = tf.argMax(tf.slice(logits, [0, sequence.length - 1, 0], [1, 1, -1]), -1)
        expect(best.dataSync()[0]).toBe(token)
        tf.dispose([logits, best])
        sequence.push(token)
      }
      expect(result.finishReason).toBe('length')
      expect(Array.from(result.promptIds)).toEqual(Array.from(prompts[index]!))
    }
  })

  it('same seed gives the same samples; another seed other samples', async () => {
    const options = { inputIds: prompts, maxNewTokens: 12, temperature: 1.3, stopTokenIds: [] }
    const a = await generate(model, { ...options, seed: 5 })
    const b = await generate(model, { ...options, seed: 5 })
    const c = await generate(model, { ...options, seed: 6 })
    expect(b).toEqual(a)
    expect(c.map((result) => Array.from(result.tokenIds))).not.toEqual(a.map((result) => Array.from(result.tokenIds)))
  })

  it('a sequence samples the same tokens alone or in a batch, given its own seed', async () => {
    const options = { maxNewTokens: 8, temperature: 1, topP: 0.9, stopTokenIds: [] }
    const batched = await generate(model, { ...options, inputIds: prompts, seed: [1, 2, 3] })
    const alone = await generate(model, { ...options, inputIds: [prompts[1]!], seed: [2] })
    expect(Array.from(alone[0]!.tokenIds)).toEqual(Array.from(batched[1]!.tokenIds))
    for (let index = 0; index < alone[0]!.logprobs.length; index++) expect(alone[0]!.logprobs[index]).toBeCloseTo(batched[1]!.logprobs[index]!, 4)
  })

  it("log-probs are the sampling distribution's (log softmax(logits / T), unfiltered), as sequenceLogprobs recomputes them at T", async () => {
    const results = await generate(model, { inputIds: prompts, maxNewTokens: 7, temperature: 0.7, topK: 20, seed: 9, stopTokenIds: [] })
    const responseIds = results.map((result) => result.tokenIds)
    const { logprobs, responseMask } = sequenceLogprobs(model, { promptIds: prompts, responseIds }, { temperature: 0.7 })
    const recomputed = logprobs.arraySync()
    results.forEach((result, row) => {
      result.logprobs.forEach((value, step) => expect(value).toBeCloseTo(recomputed[row]![step]!, 4))
    })
    tf.dispose([logprobs, responseMask])
  })

  it('topK 1 and a tiny topP are greedy; minP 1 keeps only the most likely token', async () => {
    const greedy = await generate(model, { inputIds: prompts, maxNewTokens: 5, temperature: 0, stopTokenIds: [] })
    for (const options of [{ topK: 1 }, { topP: 1e-6 }, { minP: 1 }]) {
      const sampled = await generate(model, { inputIds: prompts, maxNewTokens: 5, temperature: 2, seed: 3, stopTokenIds: [], ...options })
      expect(sampled.map((result) => Array.from(result.tokenIds))).toEqual(greedy.map((result) => Array.from(result.tokenIds)))
    }
  })

  it('stops at a stop token (kept as the last token) and reports the finish reason per sequence', async () => {
    const greedy = await generate(model, { inputIds: prompts, maxNewTokens: 6, temperature: 0, stopTokenIds: [] })
    const stopToken = greedy[0]!.tokenIds[2]!
    const stopped = await generate(model, { inputIds: prompts, maxNewTokens: 6, temperature: 0, stopTokenIds: [stopToken] })
    const first = Array.from(greedy[0]!.tokenIds).indexOf(stopToken)
    expect(Array.from(stopped[0]!.tokenIds)).toEqual(Array.from(greedy[0]!.tokenIds.slice(0, first + 1)))
    expect(stopped[0]!.finishReason).toBe('stop')
    stopped.forEach((result, index) => {
      const position = Array.from(greedy[index]!.tokenIds).indexOf(stopToken)
      expect(result.finishReason).toBe(position >= 0 ? 'stop' : 'length')
    })
  })

  it('stops at a stop string with a tokenizer and cuts the text before it', async () => {
    const tokenizer = createByteTokenizer()
    const greedy = await generate(model, { prompts: ['ab', 'hello'], tokenizer, maxNewTokens: 8, temperature: 0, stopTokenIds: [] })
    const text = greedy[0]!.text!
    expect(greedy[0]!.text).toBe(tokenizer.decode(greedy[0]!.tokenIds))
    const stop = text.slice(3, 5)
    const stopped = await generate(model, { prompts: ['ab', 'hello'], tokenizer, maxNewTokens: 8, temperature: 0, stopStrings: [stop], stopTokenIds: [] })
    expect(stopped[0]!.finishReason).toBe('stop')
    expect(stopped[0]!.text).toBe(text.slice(0, text.indexOf(stop)))
    expect(stopped[0]!.tokenIds.length).toBe(text.indexOf(stop) + stop.length)
  })

  it('leaves numTensors unchanged', async () => {
    await expectNoLeaks(() => generate(model, { inputIds: prompts, maxNewTokens: 4, seed: 1 }), { label: 'generate' })
  })

  it('rejects bad input naming the argument and the value', async () => {
    await expect(generate(model, { inputIds: [[1, 300]], maxNewTokens: 2 })).rejects.toThrow(/inputIds\[0\]\[1\].*300.*\[0, 259\)/)
    await expect(generate(model, { inputIds: [[]], maxNewTokens: 2 })).rejects.toThrow(InvalidArgumentError)
    await expect(generate(model, { inputIds: [[1]], maxNewTokens: 0 })).rejects.toThrow(/options\.maxNewTokens/)
    await expect(generate(model, { inputIds: [[1]], topP: 0 })).rejects.toThrow(/options\.topP/)
    await expect(generate(model, { prompts: ['x'] })).rejects.toThrow(/options\.tokenizer/)
    await expect(generate(model, { inputIds: [[1]], stopStrings: ['x'] })).rejects.toThrow(/options\.tokenizer/)
    await expect(generate(model, { inputIds: [[1], [2]], seed: [1] })).rejects.toThrow(/options\.seed/)
  })
})
