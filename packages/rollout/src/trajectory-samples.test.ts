import { sampleSchema, type Trajectory, type Turn } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { trajectoryToSamples } from './trajectory-samples.js'

const turn = (index: number, role: string, policyId: string, withCompletion = true): Turn => ({
  index,
  role,
  observation: `o${index}`,
  action: `a${index}`,
  ...(withCompletion
    ? {
        completion: {
          text: `a${index}`,
          promptTokenIds: Int32Array.of(1, 2),
          tokenIds: Int32Array.of(index),
          logprobs: Float32Array.of(-index),
          finishReason: 'stop' as const,
        },
      }
    : {}),
  policyId,
  rewards: {},
  invalidAction: index === 2,
})
const trajectory: Trajectory = {
  id: 'game/1/0',
  environmentId: 'game',
  seed: 1,
  groupId: 'game/1',
  roles: ['a', 'b'],
  turns: [turn(0, 'a', 'learner'), turn(1, 'b', 'opponent'), turn(2, 'a', 'learner'), turn(3, 'b', 'scripted', false)],
  returns: { a: 1, b: -1 },
  done: true,
  truncated: false,
}

describe('trajectoryToSamples', () => {
  it('makes one sample per policy turn with its ids, log-probs and invalid flag', () => {
    const samples = trajectoryToSamples(trajectory)
    expect(samples.map((sample) => [sample.turnIndex, sample.role, sample.invalid])).toEqual([
      [0, 'a', false],
      [1, 'b', false],
      [2, 'a', true],
    ])
    expect(samples.every((sample) => sampleSchema.safeParse(sample).success)).toBe(true)
    expect(samples[2]).toMatchObject({
      trajectoryId: 'game/1/0',
      environmentId: 'game',
      groupId: 'game/1',
      responseTokenIds: Int32Array.of(2),
      rolloutLogprobs: Float32Array.of(-2),
    })
    expect(samples[0]?.policyVersion).toBeUndefined()
  })

  it('filters by policy and role, stamps the policy version, and gives nothing for a failed trajectory', () => {
    expect(trajectoryToSamples(trajectory, { learnerPolicyIds: ['learner'] }).map((sample) => sample.turnIndex)).toEqual([0, 2])
    expect(trajectoryToSamples(trajectory, { trainRoles: ['b'] }).map((sample) => sample.turnIndex)).toEqual([1])
    expect(trajectoryToSamples(trajectory, { learnerPolicyIds: ['learner'], trainRoles: ['b'] })).toEqual([])
    expect(trajectoryToSamples(trajectory, { policyVersion: 4 })[0]?.policyVersion).toBe(4)
    expect(trajectoryToSamples({ ...trajectory, error: 'Error: boom' })).toEqual([])
  })

  it("copies each turn's state key to its sample, and none where the turn has none", () => {
    const keyed = { ...trajectory, turns: trajectory.turns.map((played) => (played.index === 1 ? played : { ...played, stateKey: `s${played.index}` })) }
    const samples = trajectoryToSamples(keyed)
    expect(samples.map((sample) => sample.stateKey)).toEqual(['s0', undefined, 's2'])
    expect('stateKey' in samples[1]!).toBe(false)
    expect(samples.map((sample) => sampleSchema.parse(sample).stateKey)).toEqual(['s0', undefined, 's2'])
  })

  it("carries each completion's per-token policy versions, the sample's policyVersion the oldest of them (else the stamped one)", () => {
    const versioned = (played: Turn, versions: number[]): Turn => ({
      ...played,
      completion: {
        ...played.completion!,
        tokenIds: Int32Array.from(versions, () => 5),
        logprobs: new Float32Array(versions.length),
        tokenPolicyVersions: Int32Array.from(versions),
      },
    })
    const partial = {
      ...trajectory,
      turns: [versioned(trajectory.turns[0]!, [3, 3, 4, 4]), versioned(trajectory.turns[1]!, []), trajectory.turns[2]!, trajectory.turns[3]!],
    }
    const samples = trajectoryToSamples(partial, { policyVersion: 2 })
    expect(samples.map((sample) => sample.policyVersion)).toEqual([3, 2, 2])
    expect(samples.map((sample) => (sample.tokenPolicyVersions === undefined ? undefined : [...sample.tokenPolicyVersions]))).toEqual([
      [3, 3, 4, 4],
      [],
      undefined,
    ])
    for (const sample of samples) sampleSchema.parse(sample)
    // Unstamped (a versioned policy collected synchronously): the tokens' oldest version still.
    expect(trajectoryToSamples(partial).map((sample) => sample.policyVersion)).toEqual([3, undefined, undefined])
  })
})
