import * as tf from '@tensorflow/tfjs-core'
import { createByteTokenizer } from '@ludic/core/test'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { createModel } from '../model/create-model.js'
import { createLocalPolicy } from '../policy/create-local-policy.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { generate } from './generate.js'

beforeAll(initTestBackend)

let model: CausalLanguageModel
beforeAll(() => {
  model = createModel('tiny', { vocabSize: 259, seed: 8, overrides: { hiddenSize: 32, intermediateSize: 64, initializerRange: 0.3 } })
})
afterAll(() => model.dispose())

const tokenizer = createByteTokenizer()
const question = (content: string) => [{ role: 'user' as const, content }]

describe('generate: yielding, aborting, streaming', () => {
  it('yields to the event loop between decode steps: a timer keeps firing during a long generate', async () => {
    const ticks: number[] = []
    const timer = setInterval(() => ticks.push(performance.now()), 1)
    const start = performance.now()
    try {
      // Long enough (8 rows × 1500 tokens) for many timer ticks however fast the decode path is.
      await generate(model, { inputIds: Array.from({ length: 8 }, (_, row) => [1, 2, row]), maxNewTokens: 1500, stopTokenIds: [] })
    } finally {
      clearInterval(timer)
    }
    const end = performance.now()
    const times = [start, ...ticks.filter((time) => time <= end), end]
    const longestGap = Math.max(...times.slice(1).map((time, index) => time - times[index]!))
    expect(ticks.length).toBeGreaterThan(20)
    expect(longestGap).toBeLessThan(250)
  })

  it('an AbortSignal stops generation at the next step: it rejects with the reason, promptly, and frees every tensor', async () => {
    const before = tf.memory().numTensors
    const controller = new AbortController()
    const reason = new Error('enough')
    let steps = 0
    let stepsAtAbort = 0
    const started = performance.now()
    setTimeout(() => {
      stepsAtAbort = steps
      controller.abort(reason)
    }, 30)
    const pending = generate(model, {
      prompts: ['abc'],
      tokenizer,
      maxNewTokens: 2000,
      stopTokenIds: [],
      signal: controller.signal,
      onText: () => {
        steps++
      },
    })
    await expect(pending).rejects.toBe(reason)
    expect(performance.now() - started).toBeLessThan(1000)
    expect(steps - stepsAtAbort).toBeLessThanOrEqual(1)
    expect(tf.memory().numTensors).toBe(before)
    // An already aborted signal: nothing runs.
    await expect(generate(model, { inputIds: [[1]], signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
    expect(tf.memory().numTensors).toBe(before)
  })

  it('onText streams whole characters that join to each completion text, stop strings and stop tokens left out', async () => {
    const prompts = ['ab', 'hello', 'x']
    const free = await generate(model, { prompts, tokenizer, maxNewTokens: 40, temperature: 1.5, seed: 3, stopTokenIds: [] })
    const stop = free[1]!.text!.slice(6, 8)
    const pieces: string[][] = prompts.map(() => [])
    const streamed = await generate(model, {
      prompts,
      tokenizer,
      maxNewTokens: 40,
      temperature: 1.5,
      seed: 3,
      stopTokenIds: [free[0]!.tokenIds[20]!],
      stopStrings: [stop],
      onText: (index, text) => pieces[index]!.push(text),
    })
    expect(streamed[1]!.finishReason).toBe('stop')
    streamed.forEach((sequence, index) => {
      expect(pieces[index]!.join('')).toBe(sequence.text)
      expect(pieces[index]!.length).toBeGreaterThan(1)
      for (const piece of pieces[index]!) expect(piece).not.toMatch(/^[\udc00-\udfff]|[\ud800-\udbff]$/) // no half of a surrogate pair
    })
  })

  it('createLocalPolicy takes GenerateOptions: onText by request index across batches, and signal', async () => {
    const policy = createLocalPolicy({ model, tokenizer, maxBatch: 2 })
    const requests = ['one', 'two', 'three'].map((content, index) => ({ messages: question(content), maxTokens: 12, seed: index }))
    const pieces: string[] = ['', '', '']
    const completions = await policy.generate(requests, { onText: (index, text) => (pieces[index] += text) })
    expect(pieces).toEqual(completions.map((completion) => completion.text))
    const before = tf.memory().numTensors
    const controller = new AbortController()
    const pending = policy.generate(
      requests.map((request) => ({ ...request, maxTokens: 1500 })),
      { signal: controller.signal, onText: () => controller.abort(new Error('client went away')) },
    )
    await expect(pending).rejects.toThrow('client went away')
    expect(tf.memory().numTensors).toBe(before)
  })
})
