import { describe, expect, it } from 'vitest'
import { completionSchema, stepOutcomeSchema } from '../data.js'
import { createByteTokenizer, createScriptedEnvironment, createScriptedPolicy } from './index.js'

describe('test doubles', () => {
  it('byte tokenizer round-trips any text and marks special tokens', () => {
    const tokenizer = createByteTokenizer()
    const text = 'héllo 👋🏽 世界\r\n'
    const ids = tokenizer.encode(text)
    expect(ids[0]).toBe(tokenizer.bosTokenId)
    expect(tokenizer.decode(ids)).toBe(`<bos>${text}`)
    expect(tokenizer.decode(ids, { skipSpecialTokens: true })).toBe(text)
    expect(tokenizer.tokenToId('<eos>')).toBe(257)
    expect(() => tokenizer.decode([300])).toThrow(/ids\[0\]/)
  })

  it('scripted policy replays its replies in order and fails when it runs out', async () => {
    const policy = createScriptedPolicy({ replies: ['bet', { text: 'fold', logprobs: [-1, -1, -1, -1], finishReason: 'length' }] })
    const request = { messages: [{ role: 'user' as const, content: 'your move' }], maxTokens: 4 }
    const [first, second] = await policy.generate([request, request])
    expect(completionSchema.safeParse(first).success).toBe(true)
    expect(first?.text).toBe('bet')
    expect(Array.from(first!.logprobs)).toEqual([0, 0, 0])
    expect(second?.finishReason).toBe('length')
    expect(policy.requests).toHaveLength(2)
    expect(policy.calls).toBe(1)
    await expect(policy.generate([request])).rejects.toThrow(/ran out of replies/)
  })

  it('scripted policy refuses minTokens and ignoreEos by name (its replies are fixed texts)', async () => {
    const policy = createScriptedPolicy({ id: 'fixed', replies: ['a', 'b'] })
    const request = { messages: [{ role: 'user' as const, content: 'go' }], maxTokens: 4 }
    await expect(policy.generate([request, { ...request, minTokens: 2 }])).rejects.toThrow(/'requests\[1\]\.minTokens'.*scripted policy 'fixed'/)
    await expect(policy.generate([{ ...request, ignoreEos: true }])).rejects.toThrow(/'requests\[0\]\.ignoreEos'/)
  })

  it('scripted environment plays its turns, ends with rewards, and treats illegal actions as outcomes', () => {
    const environment = createScriptedEnvironment({
      id: 'duel-v1',
      turns: [
        { role: 'a', observation: 'seed {seed}: pick', legalActions: ['x', 'y'] },
        { role: 'b', observation: 'your turn' },
      ],
      finalRewards: { a: 1, b: -1 },
    })
    expect(environment.roles).toEqual(['a', 'b'])
    expect(environment.reset(7).observation).toBe('seed 7: pick')
    const first = environment.step('x')
    expect(stepOutcomeSchema.safeParse(first).success).toBe(true)
    expect(first.next?.role).toBe('b')
    expect(environment.step('anything')).toEqual({ done: true, truncated: false, rewards: { a: 1, b: -1 }, info: {} })
    expect(() => environment.step('x')).toThrow(/after the episode ended/)
    environment.reset(8)
    const invalid = environment.step('z')
    expect(invalid.info.invalidAction).toBe(true)
    expect(invalid.rewards).toEqual({ a: -1, b: 0 })
    expect(environment.actions).toEqual(['z'])
  })
})
