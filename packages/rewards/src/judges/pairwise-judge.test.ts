import type { PolicyV1 } from '@ludic/core'
import { pairwiseJudgementSchema } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import { describe, expect, it } from 'vitest'
import { createPairwiseJudge } from './pairwise-judge.js'
import { answerTrajectory } from './test-trajectories.js'
import { promptReadingJudge, shownCandidates } from './test-judges.js'

const warm = answerTrajectory('warm', 'Ahoy, friend! Sit by the fire and hear of the sea.', { context: 'You are a sailor. Greet the guest.' })
const cold = answerTrajectory('cold', 'Hello.', { context: 'You are a sailor. Greet the guest.' })

/** Prefers the candidate that mentions the sea. */
const seaJudge = () =>
  promptReadingJudge('sea-judge', (candidates) => {
    const sea = candidates.find((candidate) => candidate.text.includes('sea'))
    return sea === undefined ? 'Verdict: tie' : `Reasoning: more in character.\nVerdict: ${sea.label}`
  })

describe('createPairwiseJudge', () => {
  it('asks in both orders and maps the verdicts back to a and b', async () => {
    const policy = seaJudge()
    const judge = createPairwiseJudge({ judge: policy })
    const verdict = await judge.compare(cold, warm, { contextId: 'sailor/guest/0' })
    expect(verdict.outcome).toBe('b')
    expect(verdict.judgements.map((judgement) => [judgement.order, judgement.winner])).toEqual([
      ['AB', 'B'],
      ['BA', 'A'],
    ])
    for (const judgement of verdict.judgements) {
      expect(pairwiseJudgementSchema.parse(judgement)).toEqual(judgement)
      expect(judgement).toMatchObject({ contextId: 'sailor/guest/0', a: 'cold', b: 'warm', judge: { model: 'sea-judge', promptVersion: 'ludic-pairwise-v1' } })
      expect(judgement.failure).toBeUndefined()
      expect(judgement.raw).toMatch(/^Reasoning/)
    }
    expect(policy.requests.map((request) => shownCandidates(request).map((candidate) => candidate.text.slice(0, 5)))).toEqual([
      ['Hello', 'Ahoy,'],
      ['Ahoy,', 'Hello'],
    ])
    expect(policy.requests[0]!.messages![1]!.content).toContain('## Context\nYou are a sailor. Greet the guest.')
    expect(judge.takeMetrics()).toEqual({
      'pairwise/comparisons': 1,
      'pairwise/calls': 2,
      'pairwise/failures': 0,
      'pairwise/retries': 0,
      'pairwise/decisiveRate': 1,
      'pairwise/agreement': 1,
      'pairwise/firstPositionRate': 0.5,
      'pairwise/longerRate': 1,
    })
  })

  it('calls a disagreement between the orders a tie, including decisive against tie', async () => {
    let call = 0
    const answersInTurn = ['Verdict: A', 'Verdict: tie']
    const judge = createPairwiseJudge({ judge: createScriptedPolicy({ replies: () => answersInTurn[call++ % 2]! }) })
    expect((await judge.compare(cold, warm)).outcome).toBe('tie')
  })

  it('takes a comparison function and a rubric dimension', async () => {
    const judge = createPairwiseJudge({
      judge: function byGreeting(_context, first, second) {
        return first.includes('Ahoy') ? 'A' : second.includes('Ahoy') ? 'B' : 'tie'
      },
      dimension: { name: 'Persona consistency', description: 'speaks like a sailor' },
    })
    const verdict = await judge.compare(warm, cold)
    expect(verdict.outcome).toBe('a')
    expect(verdict.judgements[0]).toMatchObject({ dimension: 'Persona consistency', judge: { model: 'byGreeting', promptVersion: 'comparison-function' } })
    expect(verdict.judgements[0]!.contextId).toBe('group-0')
  })

  it('puts the dimension into the prompt', async () => {
    const policy = seaJudge()
    await createPairwiseJudge({ judge: policy, dimension: { name: 'Empathy', description: 'notices how the guest feels' } }).compare(cold, warm)
    expect(policy.requests[0]!.messages![1]!.content).toContain('Judge only on Empathy: notices how the guest feels')
  })

  it('records a failed order as a tie with its raw text and failure, never rejecting', async () => {
    // Unreadable whenever 'Hello.' is shown first (order AB), 'Verdict: A' otherwise.
    const policy = promptReadingJudge('fussy', (candidates) => (candidates[0]!.text === 'Hello.' ? 'A or B, hard to say' : 'Verdict: A'))
    const judge = createPairwiseJudge({ judge: policy })
    const verdict = await judge.compare(cold, warm)
    expect(verdict.outcome).toBe('tie')
    const [first, second] = verdict.judgements
    expect(first).toMatchObject({ winner: 'tie', raw: 'A or B, hard to say' })
    expect(first!.failure).toMatch(/no readable answer after 3 attempts: the answer is ambiguous/)
    expect(second).toMatchObject({ order: 'BA', winner: 'A' })
    expect(judge.takeMetrics()).toMatchObject({ 'pairwise/failures': 1, 'pairwise/retries': 2, 'pairwise/calls': 4 })
  })

  it('records a throwing or silent judge as ties', async () => {
    const throwing: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'down',
      generate: async () => {
        throw new Error('502 Bad Gateway')
      },
    }
    const silent: PolicyV1 = { specificationVersion: 'v1', id: 'silent', generate: () => new Promise(() => {}) }
    for (const [policy, failure] of [
      [throwing, /the judge 'down' failed: 502 Bad Gateway/],
      [silent, /did not answer within 20 ms/],
    ] as const) {
      const judge = createPairwiseJudge({ judge: policy, timeoutMs: 20 })
      const verdict = await judge.compare(cold, warm)
      expect(verdict.outcome).toBe('tie')
      for (const judgement of verdict.judgements) expect(judgement.failure).toMatch(failure)
      expect(judge.takeMetrics()['pairwise/failures']).toBe(2)
    }
  })

  it('refuses bad options and arguments, naming them', async () => {
    expect(() => createPairwiseJudge({ judge: 3 as never })).toThrow(/options.judge/)
    expect(() => createPairwiseJudge({ judge: () => 'A', dimension: { name: '' } as never })).toThrow(/options.dimension/)
    await expect(createPairwiseJudge({ judge: () => 'A' }).compare({} as never, warm)).rejects.toThrow(/Invalid argument 'a/)
  })
})
