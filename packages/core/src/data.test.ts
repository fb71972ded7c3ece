import { describe, expect, it } from 'vitest'
import {
  advantageBatchSchema,
  completionSchema,
  generationRequestSchema,
  groupJudgementSchema,
  pairwiseJudgementSchema,
  refuseLengthControls,
  requestMessages,
  sampleSchema,
  stepOutcomeSchema,
  maxStateKeyLength,
  stateKeySchema,
  trajectorySchema,
  turnSchema,
  turnContextOf,
  turnViewSchema,
} from './data.js'

describe('data schemas', () => {
  it('accept valid data and reject invalid data', () => {
    expect(generationRequestSchema.safeParse({ messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 }).success).toBe(true)
    expect(generationRequestSchema.safeParse({ messages: [], maxTokens: 8 }).success).toBe(false)
    expect(generationRequestSchema.safeParse({ messages: [{ role: 'robot', content: 'hi' }], maxTokens: 8 }).success).toBe(false)
    expect(generationRequestSchema.safeParse({ messages: [{ role: 'user', content: 'hi' }], maxTokens: 8, topP: 0 }).success).toBe(false)
  })

  it('a generation request has messages (a chat) or a prompt (raw text), exactly one; a chat-only policy refuses a prompt by name', () => {
    expect(generationRequestSchema.safeParse({ prompt: 'Once upon a time', maxTokens: 8 }).success).toBe(true)
    const both = generationRequestSchema.safeParse({ messages: [{ role: 'user', content: 'hi' }], prompt: 'hi', maxTokens: 8 })
    expect(both.error?.issues[0]).toMatchObject({ path: ['prompt'], message: 'a request takes messages or a prompt, not both' })
    expect(generationRequestSchema.safeParse({ maxTokens: 8 }).error?.issues[0]).toMatchObject({ path: ['messages'] })
    const messages = [{ role: 'user' as const, content: 'hi' }]
    expect(requestMessages({ messages, maxTokens: 1 }, 0)).toBe(messages)
    expect(() => requestMessages({ prompt: 'go on', maxTokens: 1 }, 3, 'the opponent')).toThrow(
      /Invalid argument 'requests\[3\]\.prompt' \(value: "go on"\): the opponent continues chats only/,
    )
  })

  it("a request's minTokens is an integer from 0 to maxTokens; ignoreEos a boolean; a policy that cannot honour them refuses them by name", () => {
    const chat = { messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 8 }
    expect(generationRequestSchema.parse({ ...chat, minTokens: 8, ignoreEos: true })).toMatchObject({ minTokens: 8, ignoreEos: true })
    expect(generationRequestSchema.safeParse({ ...chat, minTokens: 9 }).error?.issues[0]).toMatchObject({
      path: ['minTokens'],
      message: 'must not exceed maxTokens (8)',
    })
    expect(generationRequestSchema.safeParse({ ...chat, minTokens: -1 }).error?.issues[0]).toMatchObject({ path: ['minTokens'] })
    expect(generationRequestSchema.safeParse({ ...chat, minTokens: 1.5 }).error?.issues[0]).toMatchObject({ path: ['minTokens'] })
    expect(generationRequestSchema.safeParse({ ...chat, ignoreEos: 'yes' }).error?.issues[0]).toMatchObject({ path: ['ignoreEos'] })
    expect(() => refuseLengthControls({ ...chat, minTokens: 0, ignoreEos: false }, 0)).not.toThrow()
    expect(() => refuseLengthControls({ ...chat, minTokens: 4 }, 2, 'the scripted policy')).toThrow(
      /Invalid argument 'requests\[2\]\.minTokens' \(value: 4\): is not supported by the scripted policy/,
    )
    expect(() => refuseLengthControls({ ...chat, ignoreEos: true }, 0)).toThrow(/'requests\[0\]\.ignoreEos' \(value: true\)/)
  })

  const completion = {
    text: 'ab',
    promptTokenIds: new Int32Array([1]),
    tokenIds: new Int32Array([97, 98]),
    logprobs: new Float32Array([-0.1, -0.2]),
    finishReason: 'stop',
  }

  it('completion needs one log-probability per token', () => {
    expect(completionSchema.safeParse(completion).success).toBe(true)
    const result = completionSchema.safeParse({ ...completion, logprobs: new Float32Array(1) })
    expect(result.success).toBe(false)
    expect(result.error?.issues[0]?.path).toEqual(['logprobs'])
    expect(completionSchema.safeParse({ ...completion, tokenIds: [97, 98] }).success).toBe(false)
  })

  it('completion and sample per-token policy versions: one integer ≥ 0 per token, an Int32Array', () => {
    expect(completionSchema.safeParse({ ...completion, tokenPolicyVersions: new Int32Array([3, 4]) }).success).toBe(true)
    const short = completionSchema.safeParse({ ...completion, tokenPolicyVersions: new Int32Array([3]) })
    expect(short.error?.issues[0]?.path).toEqual(['tokenPolicyVersions'])
    expect(short.error?.issues[0]?.message).toMatch(/tokenIds and tokenPolicyVersions must have the same length/)
    const negative = completionSchema.safeParse({ ...completion, tokenPolicyVersions: new Int32Array([3, -1]) })
    expect(negative.error?.issues[0]?.message).toMatch(/integers ≥ 0/)
    expect(completionSchema.safeParse({ ...completion, tokenPolicyVersions: [3, 4] }).success).toBe(false)
    const sample = {
      trajectoryId: 't1',
      turnIndex: 0,
      role: 'player0',
      environmentId: 'e',
      groupId: 'g',
      promptTokenIds: new Int32Array([1]),
      responseTokenIds: new Int32Array([97, 98]),
      rolloutLogprobs: new Float32Array([-0.1, -0.2]),
      invalid: false,
      policyVersion: 3,
    }
    expect(sampleSchema.safeParse({ ...sample, tokenPolicyVersions: new Int32Array([3, 4]) }).success).toBe(true)
    expect(sampleSchema.safeParse({ ...sample, tokenPolicyVersions: new Int32Array([3, 4, 4]) }).error?.issues[0]?.path).toEqual(['tokenPolicyVersions'])
    expect(sampleSchema.safeParse({ ...sample, tokenPolicyVersions: new Int32Array([-2, 4]) }).success).toBe(false)
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

  it("a request carries its turn's structured view (turnContextOf): kept when parsed, malformed refused by path", () => {
    const view = { role: 'player1', observation: 'Pick a cell', legalActions: ['[0]', '[4]'], stateKey: 'X to move', state: { board: ['O', ''] } }
    expect(turnViewSchema.parse(view)).toEqual(view)
    const turn = turnContextOf('tictactoe-v0', view)
    expect(turn).toEqual({ environmentId: 'tictactoe-v0', role: 'player1', legalActions: ['[0]', '[4]'], stateKey: 'X to move', state: { board: ['O', ''] } })
    expect(turnContextOf('e', { role: 'a', observation: 'o' })).toEqual({ environmentId: 'e', role: 'a' })
    const request = { messages: [{ role: 'user' as const, content: 'Pick a cell' }], maxTokens: 8, turn }
    expect(generationRequestSchema.parse(request).turn).toEqual(turn) // z.object drops unknown keys: the field must be in the schema
    const bad = generationRequestSchema.safeParse({ ...request, turn: { role: 'player1', legalActions: 'all' } })
    expect(bad.error?.issues.map((issue) => issue.path.join('.'))).toEqual(['turn.environmentId', 'turn.legalActions'])
  })

  it('a state key rides the turn view, the turn and the sample: kept when parsed, 1 to maxStateKeyLength characters', () => {
    const view = { role: 'player0', observation: 'Your card is: K', stateKey: 'player0|card K|history ' }
    expect(turnViewSchema.parse(view)).toEqual(view) // z.object drops unknown keys: the key must be in the schema
    const turn = { index: 0, role: 'player0', observation: 'o', action: '[bet]', rewards: {}, invalidAction: false, stateKey: 'k' }
    expect(turnSchema.parse(turn).stateKey).toBe('k')
    const sample = {
      trajectoryId: 't1',
      turnIndex: 0,
      role: 'player0',
      environmentId: 'kuhn-poker-v1',
      groupId: 'g',
      promptTokenIds: new Int32Array(3),
      responseTokenIds: new Int32Array(0),
      rolloutLogprobs: new Float32Array(0),
      invalid: false,
      stateKey: 'k',
    }
    expect(sampleSchema.parse(sample).stateKey).toBe('k')
    expect(turnViewSchema.safeParse({ ...view, stateKey: 'x'.repeat(maxStateKeyLength) }).success).toBe(true)
    const long = turnViewSchema.safeParse({ ...view, stateKey: 'x'.repeat(maxStateKeyLength + 1) })
    expect(long.error?.issues[0]).toMatchObject({ path: ['stateKey'], message: 'must be at most 1024 characters' })
    expect(turnViewSchema.safeParse({ ...view, stateKey: '' }).error?.issues[0]).toMatchObject({ path: ['stateKey'], message: 'must not be empty' })
    expect(sampleSchema.safeParse({ ...sample, stateKey: 3 }).success).toBe(false)
    expect(stateKeySchema.safeParse('x'.repeat(maxStateKeyLength + 1)).success).toBe(false)
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

describe('judgement schemas', () => {
  const judge = { model: 'rule-judge', promptVersion: 'pairwise-v1' }
  it('pairwise judgements: position winner, order, failures kept with the raw text', () => {
    const judgement = { id: 'j1', contextId: 'c1', a: 't1', b: 't2', order: 'AB', winner: 'A', judge }
    expect(pairwiseJudgementSchema.safeParse(judgement).success).toBe(true)
    expect(pairwiseJudgementSchema.safeParse({ ...judgement, winner: 'tie', raw: 'maybe?', failure: 'no verdict in the answer' }).success).toBe(true)
    expect(pairwiseJudgementSchema.safeParse({ ...judgement, winner: 'C' }).success).toBe(false)
    expect(pairwiseJudgementSchema.safeParse({ ...judgement, order: 'BB' }).success).toBe(false)
    expect(pairwiseJudgementSchema.safeParse({ ...judgement, judge: { model: '', promptVersion: 'v1' } }).success).toBe(false)
  })

  it('group judgements: finite ranks and scores', () => {
    const group = { groupId: 'g', candidates: ['a', 'b', 'c'], ranking: [1, 2.5, 2.5], scores: [1, 0.25, 0.25] }
    expect(groupJudgementSchema.safeParse(group).success).toBe(true)
    expect(groupJudgementSchema.safeParse({ ...group, scores: [1, Number.NaN, 0] }).success).toBe(false)
    expect(groupJudgementSchema.safeParse({ ...group, candidates: ['a', ''] }).success).toBe(false)
  })
})
