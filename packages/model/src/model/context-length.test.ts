import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'
import { createByteTokenizer } from '@ludic/core/test'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generate } from '../generation/generate.js'
import { createLocalPolicy } from '../policy/create-local-policy.js'
import { sequenceLogprobs } from '../sequence-logprobs.js'
import { initTestBackend } from '../test/init-test-backend.js'
import type { CausalLanguageModel } from './causal-language-model.js'
import { ContextLengthError } from './context-length.js'
import { createModel } from './create-model.js'

// On the WebAssembly backend a prompt past the positions used to end in "memory access out of bounds", after
// which every call failed with `Aborted()`: these tests run there (initTestBackend) and use the backend after.
beforeAll(initTestBackend)

let model: CausalLanguageModel
beforeAll(() => {
  model = createModel('tiny', { vocabSize: 259, seed: 3 }) // 2048 positions
})
afterAll(() => model.dispose())

async function expectBackendWorks(): Promise<void> {
  const [sample] = await generate(model, { inputIds: [[1, 2, 3]], maxNewTokens: 2 })
  expect(sample!.tokenIds).toHaveLength(2)
}

describe('the context limit', () => {
  it('generate refuses a prompt past the positions before touching the backend, which still works after', async () => {
    const before = tf.memory().numTensors
    const refused = generate(model, { inputIds: [Array(6000).fill(5)], maxNewTokens: 1 })
    await expect(refused).rejects.toThrow(ContextLengthError)
    await expect(refused).rejects.toThrow(InvalidArgumentError)
    await expect(refused).rejects.toThrow(/inputIds\[0\] \(6000 tokens\) \+ maxNewTokens \(1\): 6001 positions.*context of 2048 tokens.*maxContextTokens/)
    expect(tf.memory().numTensors).toBe(before)
    await expectBackendWorks()
  })

  it('counts maxNewTokens: a short prompt with 1e9 new tokens is refused', async () => {
    const error = await generate(model, { inputIds: [[1, 2]], maxNewTokens: 1e9 }).catch((caught: unknown) => caught)
    expect(ContextLengthError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ argument: 'options.maxNewTokens', limit: 2048, requested: 1e9 + 2 })
    await expect(generate(model, { inputIds: [Array(2040).fill(5)], maxNewTokens: 8, temperature: 0 })).resolves.toHaveLength(1) // exactly the context
  })

  it('sequenceLogprobs and forward passes refuse a sequence past the context, the cache included', async () => {
    expect(() => sequenceLogprobs(model, { promptIds: [[1], Array(2000).fill(1)], responseIds: [[2], Array(100).fill(2)] })).toThrow(
      /sequence 1: its prompt \+ response \(2100 tokens\): 2100 positions/,
    )
    // Padding does not count: a long prompt beside a long response fits when each sequence does.
    const short = createModel('tiny', { vocabSize: 259, seed: 3, overrides: { hiddenSize: 32, intermediateSize: 64 }, maxContextTokens: 32 })
    try {
      const padded = sequenceLogprobs(short, { promptIds: [Array(30).fill(1), [1]], responseIds: [[2], Array(30).fill(2)] })
      expect(padded.logprobs.shape).toEqual([2, 30])
      tf.dispose([padded.logprobs, padded.responseMask])
      expect(() => sequenceLogprobs(short, { promptIds: [Array(30).fill(1)], responseIds: [[2, 3, 4]] })).toThrow(ContextLengthError)
    } finally {
      short.dispose()
    }
    expect(() => model.forward([Array(3000).fill(1)])).toThrow(ContextLengthError)
    expect(() => model.forward([Array(5000).fill(1)], { attentionMask: [Array(5000).fill(0).fill(1, 4990)] })).toThrow(/padding included, past twice/)
    expect(() => model.forward([[1]], { positions: [[5000]] })).toThrow(/positions.*position 5000/)
    const cache = model.createCache()
    try {
      tf.dispose(model.forward([Array(2048).fill(1)], { cache }))
      expect(() => model.forward([[1]], { cache })).toThrow(/the longest row \(the cache's 2048 positions and its tokens\): 2049 positions/)
    } finally {
      cache.dispose()
    }
    await expectBackendWorks()
  })

  it('maxContextTokens lowers or raises the limit (a createModel option or a setter); GPT-2 cannot go past n_positions', async () => {
    const limited = createModel('tiny', { vocabSize: 259, seed: 3, overrides: { hiddenSize: 32, intermediateSize: 64 }, maxContextTokens: 16 })
    try {
      expect(limited.maxContextTokens).toBe(16)
      await expect(generate(limited, { inputIds: [Array(10).fill(1)], maxNewTokens: 7 })).rejects.toThrow(/context of 16 tokens \(model\.maxContextTokens\)/)
      limited.maxContextTokens = 4096
      const [sample] = await generate(limited, { inputIds: [Array(2100).fill(1)], maxNewTokens: 1 })
      expect(sample!.tokenIds).toHaveLength(1)
      expect(() => {
        limited.maxContextTokens = 0
      }).toThrow(/maxContextTokens/)
    } finally {
      limited.dispose()
    }
    const gpt2 = createModel({ model_type: 'gpt2', vocab_size: 40, n_embd: 16, n_layer: 1, n_head: 2, n_positions: 12 }, { seed: 1 })
    try {
      expect(gpt2.maxContextTokens).toBe(12)
      expect(() => {
        gpt2.maxContextTokens = 13
      }).toThrow(/learned positions 0 … 11/)
    } finally {
      gpt2.dispose()
    }
  })

  it('createLocalPolicy refuses a request past the context and splits batches so each fits', async () => {
    const tokenizer = createByteTokenizer()
    const policy = createLocalPolicy({ model, tokenizer })
    const question = (content: string) => [{ role: 'user' as const, content }]
    const before = tf.memory().numTensors
    await expect(policy.generate([{ messages: question('x'.repeat(21_000)), maxTokens: 1 }])).rejects.toThrow(
      /requests\[0\]\.maxTokens.*the prompt \(21018 tokens\) \+ maxTokens \(1\)/,
    )
    await expect(policy.generate([{ messages: question('hi'), maxTokens: 1e9 }])).rejects.toThrow(ContextLengthError)
    expect(tf.memory().numTensors).toBe(before)
    // Each fits alone, not together: a 2000-token prompt with 2 new tokens beside a short prompt with 100.
    const completions = await policy.generate([
      { messages: question('y'.repeat(1977)), maxTokens: 2, temperature: 0 },
      { messages: question('short'), maxTokens: 100, temperature: 0 },
    ])
    expect(completions.map((completion) => completion.tokenIds.length)).toEqual([2, 100])
    const [alone] = await policy.generate([{ messages: question('short'), maxTokens: 100, temperature: 0 }])
    expect(Array.from(completions[1]!.tokenIds)).toEqual(Array.from(alone!.tokenIds))
    await expectBackendWorks()
  })
})
