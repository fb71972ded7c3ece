import { describe, expect, it } from 'vitest'
import { type TrajectoryRecord, trajectoryFormat, trajectoryRecordSchema } from './trajectory-log.js'

const record: TrajectoryRecord = {
  format: trajectoryFormat,
  step: 3,
  policyVersion: 2,
  trainer: 'self-play',
  episode: {
    id: 'episode-1',
    environmentId: 'kuhn-poker-v1',
    seed: 7,
    groupId: 'group-1',
    roles: ['player0', 'player1'],
    returns: { player0: 1, player1: -1 },
    done: true,
    truncated: false,
    external: false,
  },
  turns: [
    {
      index: 0,
      role: 'player0',
      observation: 'You hold K.',
      legalActions: ['check', 'bet'],
      action: 'bet',
      rewards: { player0: 0, player1: 0 },
      invalidAction: false,
      policyId: 'learner',
      trained: true,
      prompt: '<|user|>You hold K.',
      response: 'bet',
      tokens: ['b', 'et'],
      tokenIds: [5, 6],
      logprobs: [-0.5, null],
      advantages: [0.25, 0.25],
    },
  ],
  render: 'K vs Q',
  judgement: { scorer: 'cpo-judge', score: 1, rank: 1, groupScores: [1, 0], rawText: ['A > B'], agreement: 1 },
  truncatedFields: ['turns[0].prompt'],
}

describe('trajectoryRecordSchema', () => {
  it('reads back a record written as a JSON line, unchanged', () => {
    const line = JSON.stringify(record)
    expect(trajectoryRecordSchema.parse(JSON.parse(line))).toEqual(record)
  })

  it('refuses per-token arrays whose length differs from tokenIds', () => {
    const turn = { ...record.turns[0], advantages: [0.25] }
    const result = trajectoryRecordSchema.safeParse({ ...record, turns: [turn] })
    expect(result.success).toBe(false)
    expect(result.error?.issues[0]?.path).toEqual(['turns', 0, 'advantages'])
  })

  it("keeps each token's policy version (partial rollouts), refused when their count differs from tokenIds", () => {
    const turn = { ...record.turns[0]!, policyVersions: [2, 3] }
    expect(trajectoryRecordSchema.parse(JSON.parse(JSON.stringify({ ...record, turns: [turn] }))).turns[0]!.policyVersions).toEqual([2, 3])
    const result = trajectoryRecordSchema.safeParse({ ...record, turns: [{ ...turn, policyVersions: [2] }] })
    expect(result.error?.issues[0]?.path).toEqual(['turns', 0, 'policyVersions'])
    expect(trajectoryRecordSchema.safeParse({ ...record, turns: [{ ...turn, policyVersions: [2, -1] }] }).success).toBe(false)
  })

  it('refuses another format', () => {
    expect(trajectoryRecordSchema.safeParse({ ...record, format: 'ludic.trajectory.v0' }).success).toBe(false)
  })
})
