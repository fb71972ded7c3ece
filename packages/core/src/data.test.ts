import { describe, expect, it } from 'vitest'
import { advantageBatchSchema, completionSchema, generationRequestSchema, sampleSchema, stepOutcomeSchema, trajectorySchema } from './data.js'

describe('data schemas', () => {
  it('accept valid data and reject invalid data', () => {
    expect(generationRequestSchema.safeParse({ messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 }).success).toBe(true)
    expect(generationRequestSchema.safeParse({ messages: [], maxTokens: 8 }).success).toBe(false)
    expect(generationRequestSchema.safeParse({ messages: [{ role: 'robot', content: 'hi' }], maxTokens: 8 }).success).toBe(false)
    expect(generationRequestSchema.safeParse({ messages: [{ role: 'user', content: 'hi' }], maxTokens: 8, topP: 0 }).success).toBe(false)
  })

  it('completion needs one log-probability per token', () => {
    const completion = {
      text: 'ab',
      promptTokenIds: new Int32Array([1]),
      tokenIds: new Int32Array([97, 98]),
      logprobs: new Float32Array([-0.1, -0.2]),
      finishReason: 'stop',
    }
    expect(completionSchema.safeParse(completion).success).toBe(true)
    const result = completionSchema.safeParse({ ...completion, logprobs: new Float32Array(1) })
    expect(result.success).toBe(false)
    expect(result.error?.issues[0]?.path).toEqual(['logprobs'])
    expect(completionSchema.safeParse({ ...completion, tokenIds: [97, 98] }).success).toBe(false)
  })

  it('a step that goes on needs the next view; rewards must be finite', () => {
    expect(stepOutcomeSchema.safeParse({ done: false, truncated: false, rewards: {}, info: {} }).success).toBe(false)
    expect(stepOutcomeSchema.safeParse({ done: true, truncated: false, rewards: { player0: 1 }, info: {} }).success).toBe(true)
    expect(stepOutcomeSchema.safeParse({ done: true, truncated: false, rewards: { player0: Number.NaN }, info: {} }).success).toBe(false)
  })

  it('samples and trajectories', () => {
    const sample = {
      trajectoryId: 't1',
      turnIndex: 0,
      role: 'player0',
      environmentId: 'kuhn-poker-v1',
      groupId: 'g',
      promptTokenIds: new Int32Array(3),
      responseTokenIds: new Int32Array(2),
      rolloutLogprobs: new Float32Array(2),
      invalid: false,
    }
    expect(sampleSchema.safeParse(sample).success).toBe(true)
    expect(sampleSchema.safeParse({ ...sample, rolloutLogprobs: new Float32Array(3) }).success).toBe(false)
    const trajectory = {
      id: 't1',
      environmentId: 'kuhn-poker-v1',
      seed: 1,
      groupId: 'g',
      roles: ['player0', 'player1'],
      turns: [{ index: 0, role: 'player0', observation: 'o', action: 'bet', rewards: {}, invalidAction: false }],
      returns: { player0: 1, player1: -1 },
      done: true,
      truncated: false,
    }
    expect(trajectorySchema.safeParse(trajectory).success).toBe(true)
  })

  it('advantage batches must be consistent', () => {
    const ok = { tokenRewards: [new Float32Array(2), new Float32Array(3)], groupIds: ['a', 'a'] }
    expect(advantageBatchSchema.safeParse(ok).success).toBe(true)
    expect(advantageBatchSchema.safeParse({ ...ok, groupIds: ['a'] }).success).toBe(false)
    const values = advantageBatchSchema.safeParse({ ...ok, values: [new Float32Array(2), new Float32Array(2)] })
    expect(values.success).toBe(false)
    expect(values.error?.issues[0]?.path).toEqual(['values', 1])
  })
})
