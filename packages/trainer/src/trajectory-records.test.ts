import type { Sample, Trajectory } from '@ludic/core'
import { createByteTokenizer } from '@ludic/core/test'
import { describe, expect, it } from 'vitest'
import { buildExperience } from './experience/experience.js'
import { learnerPolicyId } from './rl-config.js'
import { trajectoryRecordSchema } from './trajectory-log.js'
import { boundedTrajectoryLine, rlTrajectoryRecords } from './trajectory-records.js'

const completion = (versions: number[]) => ({
  text: 'ab',
  promptTokenIds: Int32Array.of(104, 105),
  tokenIds: Int32Array.of(97, 98, 99).subarray(0, versions.length),
  logprobs: new Float32Array(versions.length).fill(-0.5),
  finishReason: 'length' as const,
  tokenPolicyVersions: Int32Array.from(versions),
})
const trajectory: Trajectory = {
  id: 'walk/1/0',
  environmentId: 'walk',
  seed: 1,
  groupId: 'walk/1',
  roles: ['a', 'b'],
  turns: [
    { index: 0, role: 'a', observation: 'o0', action: 'ab', completion: completion([3, 4]), policyId: learnerPolicyId, rewards: {}, invalidAction: false },
    { index: 1, role: 'b', observation: 'o1', action: 'abc', completion: completion([4, 4, 5]), policyId: learnerPolicyId, rewards: {}, invalidAction: false },
  ],
  returns: { a: 1, b: 0 },
  done: true,
  truncated: false,
}
// Only role a's turn is trained (its sample carries its tokens' versions); role b's keeps its completion's.
const sample: Sample = {
  trajectoryId: trajectory.id,
  turnIndex: 0,
  role: 'a',
  environmentId: 'walk',
  groupId: trajectory.groupId,
  promptTokenIds: Int32Array.of(104, 105),
  responseTokenIds: Int32Array.of(97, 98),
  rolloutLogprobs: Float32Array.of(-0.5, -0.5),
  invalid: false,
  policyVersion: 3,
  tokenPolicyVersions: Int32Array.of(3, 4),
}

describe('rlTrajectoryRecords', () => {
  it("writes each turn's per-token policy versions (trained and untrained learner turns), dropped with the other arrays when a line is too long", () => {
    const experience = buildExperience([trajectory], [sample], { origin: { offPolicy: true, policyVersion: 3 } })
    const [record] = rlTrajectoryRecords({
      step: 6,
      trainer: 'rl',
      experience,
      externalIds: new Set(),
      policyVersion: 3,
      tokenizer: createByteTokenizer(),
      episodes: [0],
    })
    const parsed = trajectoryRecordSchema.parse(JSON.parse(boundedTrajectoryLine(record!, 1 << 20)!))
    expect(parsed.policyVersion).toBe(3)
    expect(parsed.turns.map((turn) => [turn.trained, turn.policyVersions])).toEqual([
      [true, [3, 4]],
      [false, [4, 4, 5]],
    ])
    const length = 1500
    const longTurn = { ...record!.turns[0]!, tokens: Array(length).fill('a'), tokenIds: Array(length).fill(97), logprobs: Array(length).fill(-0.5) }
    const long = { ...record!, turns: [{ ...longTurn, policyVersions: Array(length).fill(4) }] }
    const bounded = trajectoryRecordSchema.parse(JSON.parse(boundedTrajectoryLine(long, 4096)!))
    expect(bounded.turns[0]).not.toHaveProperty('tokenIds')
    expect(bounded.turns[0]).not.toHaveProperty('policyVersions')
    expect(bounded.truncatedFields).toContain('turns[0].tokens')
  })
})
