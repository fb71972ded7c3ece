import { createServer } from 'node:net'
import type { PolicyV1 } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import { createOpenAICompatiblePolicy } from '@ludic/rollout'
import { describe, expect, it } from 'vitest'
import { createGroupJudge } from './group-judge.js'
import { answerGroup } from './test-trajectories.js'

const group = () => answerGroup(['first answer', 'second, longer answer', 'third'])

function expectTie(scores: number[], size = 3) {
  expect(scores).toHaveLength(size)
  for (const score of scores) expect(Number.isFinite(score)).toBe(true)
  expect(scores).toEqual(new Array(size).fill(0.5))
}

/** A free port on loopback, closed again: connecting to it is refused. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

describe('createGroupJudge failures', () => {
  it.each([
    ['garbage', 'qwertyuiop zxcv', /no ranking found/],
    ['an empty answer', '', /the answer is empty/],
    ['a label not in the group', 'Ranking: D > A > B', /label 'D' is not a candidate \(the candidates are A, B, C\)/],
    ['a duplicated label', 'Ranking: A > A > B', /label 'A' appears more than once/],
  ])('counts %s as a tie for the shuffle after the re-asks, keeping the raw text and the failure', async (_case, answer, failure) => {
    const policy = createScriptedPolicy({ id: 'bad', replies: () => answer })
    const judge = createGroupJudge({ judge: policy })
    expectTie(await judge.score(group()))
    const [judgement] = judge.takeJudgements()
    expect(judgement!.raw).toEqual([answer, answer])
    expect(judgement!.failures).toHaveLength(2)
    for (const message of judgement!.failures!) {
      expect(message).toMatch(/no readable answer after 3 attempts: /)
      expect(message).toMatch(failure)
    }
    expect(judgement!.failures![0]).toMatch(/^shuffle 1: /)
    expect(judge.takeMetrics()).toMatchObject({ 'judge/groups': 1, 'judge/calls': 6, 'judge/failures': 2, 'judge/retries': 4, 'judge/meanScore': 0.5 })
    // Each re-ask carries the judge's answer and a note of what was wrong.
    const retry = policy.requests[1]!.messages!
    expect(retry.at(-2)).toEqual({ role: 'assistant', content: answer })
    expect(retry.at(-1)!.content).toMatch(failure)
    expect(retry.at(-1)!.content).toMatch(/Answer again with only the line 'Ranking: A > B > C'/)
  })

  it('takes a re-asked answer that parses, and counts the retry', async () => {
    let call = 0
    const policy = createScriptedPolicy({ replies: () => (call++ % 2 === 0 ? 'I cannot decide.' : 'Ranking: B > C > A') })
    const judge = createGroupJudge({ judge: policy, shuffles: 1 })
    const scores = await judge.score(group())
    expect(scores.toSorted()).toEqual([0, 0.5, 1])
    expect(judge.takeMetrics()).toMatchObject({ 'judge/calls': 2, 'judge/retries': 1, 'judge/failures': 0 })
    expect(judge.takeJudgements()[0]!.failures).toEqual([])
  })

  it('lets candidates missing from a ranking tie for last, and counts the ranking as incomplete', async () => {
    const judge = createGroupJudge({ judge: createScriptedPolicy({ replies: () => 'Ranking: A' }), shuffles: 1 })
    const scores = await judge.score(group())
    expect(scores.toSorted()).toEqual([0.25, 0.25, 1])
    expect(judge.takeMetrics()).toMatchObject({ 'judge/incompleteRankings': 1, 'judge/failures': 0 })
  })

  it('counts a judge that throws as a tie, not re-asked', async () => {
    const policy: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'broken',
      generate: async () => {
        throw new Error('CUDA out of memory')
      },
    }
    const judge = createGroupJudge({ judge: policy })
    expectTie(await judge.score(group()))
    expect(judge.takeJudgements()[0]!.failures).toEqual([
      "shuffle 1: the judge 'broken' failed: CUDA out of memory",
      "shuffle 2: the judge 'broken' failed: CUDA out of memory",
    ])
    expect(judge.takeMetrics()).toMatchObject({ 'judge/calls': 2, 'judge/failures': 2, 'judge/retries': 0 })
  })

  it('aborts a judge that never answers at timeoutMs and counts it as a tie', async () => {
    const signals: AbortSignal[] = []
    const policy: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'silent',
      generate: (_requests, options) => {
        signals.push(options!.signal!)
        return new Promise(() => {})
      },
    }
    const judge = createGroupJudge({ judge: policy, timeoutMs: 20 })
    expectTie(await judge.score(group()))
    expect(signals).toHaveLength(2)
    for (const signal of signals) expect(signal.aborted).toBe(true)
    expect(judge.takeJudgements()[0]!.failures![0]).toMatch(/the judge 'silent' failed: the judge did not answer within 20 ms \(timeoutMs\)/)
    expect(judge.takeMetrics()['judge/failures']).toBe(2)
  })

  it('counts a ranking function that throws, hangs or returns the wrong shape as a tie', async () => {
    const cases = [
      [() => Promise.reject(new Error('rubric file missing')), /the judge function failed: rubric file missing/],
      [() => new Promise<number[]>(() => {}), /did not answer within 20 ms/],
      [() => [1, 2], /must return 3 finite scores/],
      [() => [1, Number.NaN, 2], /must return 3 finite scores/],
    ] as const
    for (const [rank, failure] of cases) {
      const judge = createGroupJudge({ judge: rank, timeoutMs: 20 })
      expectTie(await judge.score(group()))
      expect(judge.takeJudgements()[0]!.failures![0]).toMatch(failure)
    }
  })

  it('counts an unreachable remote judge as a tie, naming the failure', async () => {
    const port = await closedPort()
    const remote = createOpenAICompatiblePolicy({
      baseURL: `http://127.0.0.1:${port}/v1`,
      model: 'judge-model',
      maxRetries: 1,
      retryDelayMs: 1,
      timeoutMs: 2000,
    })
    const judge = createGroupJudge({ judge: remote })
    expectTie(await judge.score(group()))
    const [judgement] = judge.takeJudgements()
    expect(judgement!.failures).toHaveLength(2)
    expect(judgement!.failures![0]).toMatch(/the judge 'judge-model' failed: .*(connect|ECONNREFUSED|Connection)/i)
    expect(judge.takeMetrics()).toMatchObject({ 'judge/failures': 2, 'judge/meanScore': 0.5 })
  })
})
