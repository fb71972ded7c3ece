import { createByteTokenizer } from '@ludic/core/test'
import { initTensors } from '@ludic/tensors'
import * as tf from '@tensorflow/tfjs-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { actionLogprobs } from './action-logprobs.js'
import { responseLogprobs } from './sequences.js'
import { createTestModel, tokenizer } from './test/support.js'

beforeAll(async () => {
  await initTensors({ backend: 'wasm', verbose: false })
})

describe('actionLogprobs', () => {
  it('scores each action with the end token after its prompt: the summed token log-probabilities', async () => {
    const model = createTestModel(4)
    const decisions = [
      { prompt: 'card J >', actions: ['[check]', '[bet]'] },
      { prompt: 'card K, bet >', actions: ['[fold]', '[call]', '[raise]'] },
    ]
    const before = tf.memory().numTensors
    const scores = await actionLogprobs(model, tokenizer, decisions)
    expect(tf.memory().numTensors).toBe(before)
    expect(scores.map((row) => row.length)).toEqual([2, 3])
    const encode = (text: string) => tokenizer.encode(text, { addSpecialTokens: false })
    const [alone] = await responseLogprobs(
      model,
      [{ promptIds: encode('card K, bet >'), responseIds: Int32Array.from([...encode('[call]'), tokenizer.eosTokenId!]) }],
      1,
    )
    expect(scores[1]![1]).toBeCloseTo(
      alone!.reduce((total, value) => total + value, 0),
      4,
    )
    for (const score of scores.flat()) expect(score).toBeLessThan(0)
    // In batches of one, the same scores.
    const batched = await actionLogprobs(model, tokenizer, decisions, { batchSize: 1 })
    batched.flat().forEach((score, index) => expect(score).toBeCloseTo(scores.flat()[index]!, 4))
    model.dispose()
  })

  it('needs a tokenizer with an end token', async () => {
    const model = createTestModel(4)
    await expect(actionLogprobs(model, { ...createByteTokenizer(), eosTokenId: undefined }, [{ prompt: 'x', actions: ['y'] }])).rejects.toThrow(/end token/)
    model.dispose()
  })
})
