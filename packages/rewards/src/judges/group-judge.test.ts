import { InvalidArgumentError, type Trajectory } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import { describe, expect, it } from 'vitest'
import { createGroupJudge, type RankingFunction } from './group-judge.js'
import { answerGroup, answerTrajectory, completionOf } from './test-trajectories.js'
import { promptReadingJudge } from './test-judges.js'

/** A rule judge: longer is better. */
const byLength: RankingFunction = (_context, candidates) => candidates.map((candidate) => candidate.length)

/** A rule judge that ties everyone and records what it was shown: `[context, ...candidates]` per call. */
function recordingTie(seen: string[][]): RankingFunction {
  return (context, candidates) => {
    seen.push([context, ...candidates])
    return candidates.map(() => 0)
  }
}

describe('createGroupJudge', () => {
  it('scores a group with a ranking function: r = (G − rank)/(G − 1), averaged over the shuffles', async () => {
    const judge = createGroupJudge({ judge: byLength })
    const scores = await judge.score(answerGroup(['ab', 'abcd', 'a', 'abc']))
    expect(scores).toEqual([1 / 3, 1, 0, 2 / 3])
    const [judgement] = judge.takeJudgements()
    expect(judgement).toMatchObject({ groupId: 'group-0', candidates: ['t0', 't1', 't2', 't3'], ranking: [3, 1, 4, 2], scores, failures: [] })
    expect(judgement!.judge).toEqual({ model: 'byLength', promptVersion: 'ranking-function' })
    expect(judge.takeJudgements()).toEqual([])
  })

  it("records each group's agreement between its shuffles in the judgement, absent with one shuffle", async () => {
    const consistent = createGroupJudge({ judge: byLength })
    await consistent.score(answerGroup(['ab', 'abcd', 'a']))
    expect(consistent.takeJudgements()[0]!.agreement).toBe(1)
    // Ranks by the position shown: the second shuffle is the reverse of the first, so every pair is ordered the other way.
    const positional = createGroupJudge({ judge: (_context, candidates) => candidates.map((_, position) => -position) })
    await positional.score(answerGroup(['ab', 'abcd', 'a']))
    expect(positional.takeJudgements()[0]!.agreement).toBe(0)
    const once = createGroupJudge({ judge: byLength, shuffles: 1 })
    await once.score(answerGroup(['ab', 'abcd', 'a']))
    expect(once.takeJudgements()[0]).not.toHaveProperty('agreement')
  })

  it('lets equal scores tie', async () => {
    const judge = createGroupJudge({ judge: (_context, candidates) => candidates.map((candidate) => (candidate.includes('sea') ? 1 : 0)) })
    expect(await judge.score(answerGroup(['the sea', 'a hill', 'sea breeze']))).toEqual([0.75, 0, 0.75])
  })

  it('shows each shuffle in another order (the second the reverse of the first) and averages the ranks', async () => {
    const shownOrders: string[][] = []
    // A position-biased rule: the candidate shown first wins, the rest by length.
    const judge = createGroupJudge({
      judge: (_context, candidates) => {
        shownOrders.push([...candidates])
        return candidates.map((candidate, position) => (position === 0 ? 100 : candidate.length))
      },
      seed: 7,
    })
    const texts = ['one', 'three', 'seventeen']
    const scores = await judge.score(answerGroup(texts))
    expect(shownOrders).toHaveLength(2)
    expect(shownOrders[1]).toEqual(shownOrders[0]!.toReversed())
    expect(shownOrders[0]!.toSorted()).toEqual(texts.toSorted())
    // Per shuffle: the first shown ranks 1, the others by length; the mean rank maps to the mean score.
    const rankIn = (order: string[], text: string) => {
      if (order[0] === text) return 1
      const rest = order.slice(1).toSorted((first, second) => second.length - first.length)
      return 2 + rest.indexOf(text)
    }
    const expected = texts.map((text) => {
      const rank = (rankIn(shownOrders[0]!, text) + rankIn(shownOrders[1]!, text)) / 2
      return (3 - rank) / 2
    })
    expect(scores).toEqual(expected)
  })

  it('shuffles reproducibly for a seed', async () => {
    const orders = async (seed: number) => {
      const shown: string[][] = []
      const judge = createGroupJudge({ judge: recordingTie(shown), seed, shuffles: 1 })
      await judge.score(answerGroup(['a', 'b', 'c', 'd', 'e', 'f']))
      return shown[0]!.slice(1)
    }
    expect(await orders(3)).toEqual(await orders(3))
    const others = await Promise.all([4, 5, 6, 7].map(orders))
    expect(others.some((order) => JSON.stringify(order) !== JSON.stringify(others[0]))).toBe(true)
  })

  it('scores a group of one 0.5 without asking, and an empty group with nothing', async () => {
    const policy = createScriptedPolicy({ replies: [] })
    const judge = createGroupJudge({ judge: policy })
    expect(await judge.score([answerTrajectory('only', 'hello')])).toEqual([0.5])
    expect(await judge.score([])).toEqual([])
    expect(policy.calls).toBe(0)
    expect(judge.takeMetrics()).toMatchObject({ 'judge/groups': 1, 'judge/calls': 0, 'judge/meanScore': 0.5 })
  })

  it('asks a language-model judge with the versioned template and reads its ranking', async () => {
    const policy = promptReadingJudge('ranker', (candidates) => {
      const best = candidates.find((candidate) => candidate.text.includes('waves'))!
      const others = candidates.filter((candidate) => candidate !== best)
      return `The one about waves is vivid.\nRanking: ${best.label} > ${others.map((candidate) => candidate.label).join(' = ')}`
    })
    const judge = createGroupJudge({ judge: policy, temperature: 0.3, maxTokens: 99 })
    const group = answerGroup(['Water.', 'The waves roll in, grey and slow.', 'It is big.'], { context: 'Describe the sea.' })
    expect(await judge.score(group)).toEqual([0.25, 1, 0.25])
    const request = policy.requests[0]!
    expect(request).toMatchObject({ maxTokens: 99, temperature: 0.3 })
    expect(request.messages![0]!.role).toBe('system')
    const prompt = request.messages![1]!.content
    expect(prompt).toContain('## Context\nDescribe the sea.')
    expect(prompt).toMatch(/### Candidate A\n/)
    expect(prompt).toMatch(/### Candidate C\n/)
    expect(prompt).toContain('Ranking: ')
    expect(judge.identity).toEqual({ model: 'ranker', promptVersion: 'ludic-group-rank-v1' })
    expect(judge.takeMetrics()).toMatchObject({ 'judge/groups': 1, 'judge/calls': 2, 'judge/failures': 0, 'judge/retries': 0, 'judge/agreement': 1 })
  })

  it('judges the scored role: the first role a policy played, or the role option', async () => {
    const seen: string[][] = []
    const twoRoles = (id: string, answer: string): Trajectory => ({
      ...answerTrajectory(id, answer, { role: 'character' }),
      roles: ['user', 'character'],
      turns: [
        { index: 0, role: 'user', observation: 'start', action: 'Hi there!', rewards: {}, invalidAction: false },
        { index: 1, role: 'character', observation: 'user: Hi there!', action: answer, completion: completionOf(answer), rewards: {}, invalidAction: false },
      ],
    })
    const judge = createGroupJudge({ judge: recordingTie(seen), shuffles: 1 })
    await judge.score([twoRoles('x', 'Hello!'), twoRoles('y', 'Hello!')])
    expect(seen[0]).toEqual(['user: Hi there!', 'Hello!', 'Hello!'])
    const userJudge = createGroupJudge({
      judge: recordingTie(seen),
      shuffles: 1,
      role: 'user',
    })
    await userJudge.score([twoRoles('x', 'Hello!'), twoRoles('y', 'Hello!')])
    expect(seen[1]).toEqual(['start', 'Hi there!', 'Hi there!'])
  })

  it('still scores a trajectory that failed (error set), as what it said', async () => {
    const failed = { ...answerTrajectory('failed', '', { error: 'policy timed out' }), turns: [] }
    const judge = createGroupJudge({ judge: byLength })
    const scores = await judge.score([answerTrajectory('ok', 'A fine answer.'), failed])
    expect(scores).toEqual([1, 0])
    expect(judge.takeJudgements()[0]!.candidates).toEqual(['ok', 'failed'])
  })

  it('cuts long candidates with a visible marker and uses a custom view', async () => {
    const seen: string[][] = []
    const judge = createGroupJudge({
      judge: recordingTie(seen),
      maxCandidateCharacters: 10,
      shuffles: 1,
      view: (trajectory) => ({ context: 'ctx', candidate: `${trajectory.id}:${trajectory.turns[0]!.action}` }),
    })
    await judge.score(answerGroup(['x'.repeat(50), 'short']))
    expect(seen[0]!.slice(1).toSorted()).toEqual(['t0:xxxxxxx…[truncated: 43 more characters]', 't1:short'])
  })

  it('refuses bad options and groups past maxGroupSize, naming the field', async () => {
    expect(() => createGroupJudge({ judge: 'gpt' as never })).toThrow(/options.judge.*must be a PolicyV1 or a ranking function/)
    expect(() => createGroupJudge({ judge: byLength, shuffles: 0 })).toThrow(InvalidArgumentError)
    expect(() => createGroupJudge({ judge: byLength, maxGroupSize: 27 })).toThrow(/options.maxGroupSize/)
    const judge = createGroupJudge({ judge: byLength, maxGroupSize: 2 })
    await expect(judge.score(answerGroup(['a', 'b', 'c']))).rejects.toThrow(/group.*more than maxGroupSize \(2\)/)
  })

  it("rejects when the caller's signal aborts (that is not a judge failure)", async () => {
    const controller = new AbortController()
    const judge = createGroupJudge({ judge: () => new Promise<number[]>(() => {}) })
    const scoring = judge.score(answerGroup(['a', 'b']), { signal: controller.signal })
    controller.abort(new Error('stop the step'))
    await expect(scoring).rejects.toThrow('stop the step')
  })

  it('keeps at most maxKeptJudgements judgements', async () => {
    const judge = createGroupJudge({ judge: byLength, maxKeptJudgements: 2 })
    for (const groupId of ['g1', 'g2', 'g3']) await judge.score(answerGroup(['a', 'bb'], { groupId }))
    expect(judge.takeJudgements().map((judgement) => judgement.groupId)).toEqual(['g2', 'g3'])
  })
})
