import * as tf from '@tensorflow/tfjs-core'
import { createByteTokenizer } from '@ludic/core/test'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
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
  /**
   * Runs `body` with a clock (`performance.now`) that moves on by `stepMs` at every reading, and counts the
   * event-loop turns meanwhile: a self-rescheduling `setImmediate` ticks once per turn of the loop. With
   * `stepMs` at the decode loop's yield interval (10 ms) every step finds the interval past, so it must yield at
   * every step; with 0 (a frozen clock) it never finds it past. Deterministic: no real time is measured.
   */
  async function countTurns<Result>(stepMs: number, body: () => Promise<Result>): Promise<{ turns: number; result: Result }> {
    let now = 0
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => (now += stepMs))
    let turns = 0
    let counting = true
    const tick = () => {
      if (!counting) return
      turns++
      setImmediate(tick)
    }
    setImmediate(tick)
    try {
      const result = await body()
      return { turns, result }
    } finally {
      counting = false
      clock.mockRestore()
    }
  }

  it.each(['host', 'fused', 'layers'] as const)(
    'yields to the event loop between decode steps once the yield interval has passed (%s path), and not before',
    async (decodePath) => {
      const steps = 40
      const run = () =>
        generate(model, {
          inputIds: [
            [1, 2, 3],
            [4, 5],
          ],
          maxNewTokens: steps,
          stopTokenIds: [],
          decodePath,
        })
      // The interval past at every step: a turn of the event loop between each two of the 40 steps.
      const yielding = await countTurns(10, run)
      expect(yielding.result.map((sequence) => sequence.tokenIds.length)).toEqual([steps, steps])
      expect(yielding.turns).toBeGreaterThanOrEqual(steps - 1)
      // The clock frozen: the interval never passes, so the steps run on without giving up the thread.
      const frozen = await countTurns(0, run)
      expect(frozen.turns).toBeLessThan(steps / 4)
    },
  )

  it('an AbortSignal stops generation at the next step: it rejects with the reason, promptly, and frees every tensor', async () => {
    const before = tf.memory().numTensors
    const controller = new AbortController()
    const reason = new Error('enough')
    let steps = 0
    let stepsAtAbort = 0
    // The abort comes from outside the generation, as a macrotask (a timer, a request's 'close'), scheduled at the
    // fifth piece of text; the clock moves on at every reading, so the loop yields (and checks the signal) at every step.
    await countTurns(10, async () => {
      const pending = generate(model, {
        prompts: ['abc'],
        tokenizer,
        maxNewTokens: 200,
        stopTokenIds: [],
        signal: controller.signal,
        onText: () => {
          if (++steps === 5)
            setImmediate(() => {
              stepsAtAbort = steps
              controller.abort(reason)
            })
        },
      })
      await expect(pending).rejects.toBe(reason)
    })
    expect(stepsAtAbort).toBeGreaterThanOrEqual(5)
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
