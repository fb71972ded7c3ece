import { createGigpo } from '@ludic/advantages'
import { createRandom, sampleSchema, type AdvantageBatch, type GenerationRequest, type Sample, type Trajectory } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import { createKuhnPoker, kuhnInformationStateOf, turnLegalActions } from '@ludic/games'
import { describe, expect, it } from 'vitest'
import { collect } from './collect.js'

/**
 * Self-play with a policy that is a function of its request: a legal move drawn with the request's seed, from the
 * turn view `collect` puts on every request (`GenerationRequest.turn`).
 */
const seededPlayer = createScriptedPolicy({
  id: 'seeded-kuhn',
  replies: (request: GenerationRequest) => {
    expect(request.turn).toMatchObject({ environmentId: 'kuhn-poker-v1', role: expect.stringMatching(/^player[01]$/) })
    expect(request.turn!.stateKey).toMatch(/^player[01]\|round 1\|chips 0\|card [JQK]\|history /)
    const legal = turnLegalActions(request.turn)
    const text = legal[createRandom(request.seed ?? 0).nextInt(legal.length)]!
    return { text, logprobs: Array.from(text, () => -0.5) }
  },
})

/** `npm start`'s setup: one round per episode, net chips as the reward. */
const rollout = () =>
  collect({
    environments: [() => createKuhnPoker({ rounds: 1, reward: 'chips', invalidPenalty: -3 })],
    policies: seededPlayer,
    seeds: [1, 2, 3, 4, 5, 6],
    groupSize: 8,
  })

/** Outcome rewards, as the trainer's: each role's episode return on the last token of its last turn. */
function outcomeBatch(trajectories: readonly Trajectory[], samples: readonly Sample[]): AdvantageBatch {
  const returns = new Map(trajectories.map((trajectory) => [trajectory.id, trajectory.returns]))
  const last = new Map<string, number>()
  for (const sample of samples)
    last.set(`${sample.trajectoryId} ${sample.role}`, Math.max(last.get(`${sample.trajectoryId} ${sample.role}`) ?? -1, sample.turnIndex))
  return {
    tokenRewards: samples.map((sample) => {
      const rewards = new Float32Array(sample.responseTokenIds.length)
      if (last.get(`${sample.trajectoryId} ${sample.role}`) === sample.turnIndex) rewards[rewards.length - 1] = returns.get(sample.trajectoryId)![sample.role]!
      return rewards
    }),
    groupIds: samples.map((sample) => sample.groupId),
    roles: samples.map((sample) => sample.role),
    trajectoryIds: samples.map((sample) => sample.trajectoryId),
    turnIndices: samples.map((sample) => sample.turnIndex),
    stateKeys: samples.map((sample) => sample.stateKey!),
  }
}

describe('state keys through a Kuhn Poker rollout', () => {
  it("gives every sample the acting player's information set: its card and the round's history", async () => {
    const { trajectories, samples, failures } = await rollout()
    expect(failures).toEqual([])
    expect(samples.length).toBeGreaterThan(96)
    const turns = new Map(trajectories.flatMap((trajectory) => trajectory.turns.map((turn) => [`${trajectory.id} ${turn.index}`, turn])))
    for (const sample of samples) {
      expect(sampleSchema.safeParse(sample).success).toBe(true)
      const turn = turns.get(`${sample.trajectoryId} ${sample.turnIndex}`)!
      expect(turn.stateKey).toBe(sample.stateKey)
      const information = kuhnInformationStateOf(turn.observation) // OpenSpiel's name: card rank, then history
      const history = information.slice(1) || '-'
      expect(sample.stateKey).toBe(`${sample.role}|round 1|chips 0|card ${'JQK'[Number(information[0])]}|history ${history}`)
    }
    // Information sets recur across deals (the opponent's card is not in them): at most 12 keys over 48 episodes.
    expect(new Set(samples.map((sample) => sample.stateKey)).size).toBeLessThanOrEqual(12)
  })

  it("lets GiGPO's step level compare the turns of a group that share a key, and only those", async () => {
    const { trajectories, samples } = await rollout()
    const batch = outcomeBatch(trajectories, samples)
    const gamma = 0.9
    const episodeOnly = createGigpo({ gamma, stepWeight: 0 }).estimate(batch).advantages
    const both = createGigpo({ gamma, stepWeight: 1 }).estimate(batch).advantages
    const stepAdvantage = both.map((row, sample) => row[0]! - episodeOnly[sample]![0]!)

    // By hand: G_k = γ^(turns after k) · R (the reward sits on the role's last turn); A^S = G − mean G over the
    // group's turns with the same key, 0 for a turn alone in its state.
    const turnsAfter = samples.map(
      (sample) =>
        samples.filter((other) => other.trajectoryId === sample.trajectoryId && other.role === sample.role && other.turnIndex > sample.turnIndex).length,
    )
    const stepReturn = samples.map(
      (sample, index) => gamma ** turnsAfter[index]! * trajectories.find((trajectory) => trajectory.id === sample.trajectoryId)!.returns[sample.role]!,
    )
    const anchors = new Map<string, number[]>()
    samples.forEach((sample, index) => {
      const key = `${sample.groupId} ${sample.stateKey}`
      anchors.set(key, [...(anchors.get(key) ?? []), index])
    })
    let shared = 0
    for (const members of anchors.values()) {
      const mean = members.reduce((sum, index) => sum + stepReturn[index]!, 0) / members.length
      for (const index of members) expect(stepAdvantage[index]).toBeCloseTo(members.length === 1 ? 0 : stepReturn[index]! - mean, 5)
      if (members.length > 1) shared++
    }
    // Each group (one deal, 8 plays) starts in one state, so every group has an anchor state with several turns.
    expect(shared).toBeGreaterThanOrEqual(6)
    expect(stepAdvantage.some((value) => Math.abs(value) > 0.1)).toBe(true)
    // Keys unique to each turn leave no state shared: the step level adds nothing.
    const unique = createGigpo({ gamma, stepWeight: 1 }).estimate({ ...batch, stateKeys: samples.map((_, index) => `turn ${index}`) }).advantages
    unique.forEach((row, sample) => expect(row[0]).toBeCloseTo(episodeOnly[sample]![0]!, 6))
  })
})
