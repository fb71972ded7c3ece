import {
  InvalidArgumentError,
  LudicError,
  type PairwiseJudgement,
  type PairwiseJudgeV1,
  type PairwiseVerdict,
  type PolicyV1,
  type Trajectory,
} from '@ludic/core'
import { createScriptedEnvironment, createScriptedPolicy, type ScriptedPolicy } from '@ludic/core/test'
import { describe, expect, it } from 'vitest'
import { runCharacterArena, type CharacterArenaOptions } from './character-arena.js'

/** A two-exchange chat: the user speaks, the character answers, twice. The seed shows in the observations. */
const chat = () =>
  createScriptedEnvironment({
    id: 'chat-v1',
    roles: ['character', 'user'],
    turns: [
      { role: 'user', observation: 'Start the conversation (seed {seed}).' },
      { role: 'character', observation: 'The user greets you (seed {seed}).' },
      { role: 'user', observation: 'Go on.' },
      { role: 'character', observation: 'The user asks for more (seed {seed}).' },
    ],
  })

const contexts = [
  { id: 'tavern', environment: chat, seed: 101 },
  { id: 'library', environment: chat, seed: 202 },
  { id: 'harbour', environment: chat, seed: 303 },
]

/** Competitors whose quality is their answer's length: eloquent > flaky > plain > terse. */
function competitors(): { id: string; policy: ScriptedPolicy }[] {
  const speaker = (id: string, text: string) => createScriptedPolicy({ id, replies: () => text })
  return [
    { id: 'terse', policy: speaker('terse', 'Ok.') },
    { id: 'plain', policy: speaker('plain', 'I see. Tell me more.') },
    { id: 'eloquent', policy: speaker('eloquent', 'Welcome, traveller! Sit by the fire and tell me of the roads you walked.') },
    {
      id: 'flaky',
      policy: createScriptedPolicy({
        id: 'flaky',
        replies: (request) => {
          if (request.messages!.some((message) => message.content.includes('seed 202'))) throw new Error('flaky refuses the library')
          return 'Ah, a visitor. What brings you here today?'
        },
      }),
    },
  ]
}

const user = () => createScriptedPolicy({ id: 'user-simulator', replies: () => 'Hello there.' })

/** A rule judge preferring the character's longer answers, asked in both orders (a disagreement would be a tie). */
function lengthJudge(options: { failIn?: string } = {}): PairwiseJudgeV1 & { calls: number } {
  const length = (trajectory: Trajectory) => trajectory.turns.filter((turn) => turn.role === 'character').reduce((total, turn) => total + turn.action.length, 0)
  const judge = {
    specificationVersion: 'v1' as const,
    name: 'length-judge',
    calls: 0,
    async compare(a: Trajectory, b: Trajectory, compareOptions?: { contextId?: string }): Promise<PairwiseVerdict> {
      judge.calls++
      if (compareOptions?.contextId === options.failIn) throw new Error('judge unreachable')
      const judgement = (order: 'AB' | 'BA'): PairwiseJudgement => {
        const [first, second] = order === 'AB' ? [a, b] : [b, a]
        const winner = length(first) > length(second) ? 'A' : length(first) < length(second) ? 'B' : 'tie'
        return {
          id: `${a.id}|${b.id}|${order}`,
          contextId: compareOptions?.contextId ?? '',
          a: a.id,
          b: b.id,
          order,
          winner,
          judge: { model: 'rule', promptVersion: 'v1' },
        }
      }
      const forward = judgement('AB')
      const backward = judgement('BA')
      const preferred = (verdict: PairwiseJudgement) =>
        verdict.winner === 'tie' ? 'tie' : (verdict.winner === 'A') === (verdict.order === 'AB') ? ('a' as const) : ('b' as const)
      const outcome = preferred(forward) === preferred(backward) ? preferred(forward) : 'tie'
      return { outcome, judgements: [forward, backward] }
    },
  }
  return judge
}

const baseOptions = (overrides: Partial<CharacterArenaOptions> = {}): CharacterArenaOptions => ({
  competitors: competitors(),
  contexts,
  opponents: { user: user() },
  judge: lengthJudge(),
  generation: { maxTokens: 32, temperature: 0.7 },
  bootstrap: { samples: 200, seed: 1 },
  ...overrides,
})

const argumentOf = async (run: () => Promise<unknown>): Promise<string> => {
  try {
    await run()
  } catch (error) {
    if (InvalidArgumentError.isInstance(error)) return error.argument
    throw error
  }
  throw new Error('did not throw')
}

describe('runCharacterArena', () => {
  it('ranks the competitors as designed, records the failed episode and skips its comparisons', async () => {
    const players = competitors()
    const judge = lengthJudge()
    const progress: string[] = []
    const result = await runCharacterArena(
      baseOptions({ competitors: players, judge, onProgress: ({ phase, completed, total }) => progress.push(`${phase} ${completed}/${total}`) }),
    )
    expect(result.report.standings.map((standing) => standing.player)).toEqual(['eloquent', 'flaky', 'plain', 'terse'])
    expect(result.failures).toEqual([{ competitor: 'flaky', context: 'library', error: expect.stringContaining('flaky refuses the library') }])
    expect(result.trajectories).toHaveLength(players.length * contexts.length)
    expect(result.trajectories.find((episode) => episode.competitor === 'flaky' && episode.context === 'library')?.trajectory?.error).toBeDefined()
    // 6 pairs × 3 contexts, less flaky's 3 pairs in the library.
    expect(result.skippedComparisons).toBe(3)
    expect(result.comparisons).toHaveLength(15)
    expect(judge.calls).toBe(15)
    expect(result.judgements).toHaveLength(30)
    expect(result.comparisons.find((comparison) => comparison.a === 'terse' && comparison.b === 'eloquent' && comparison.context === 'harbour')?.outcome).toBe(
      'b',
    )
    expect(result.report.standings.find((standing) => standing.player === 'eloquent')).toMatchObject({ wins: 8, ties: 0, losses: 0, games: 8, winRate: 1 })
    expect(result.markdown).toContain('| 1 | eloquent |')
    expect(result.markdown).toContain('1 episodes failed; 3 comparisons were skipped.')
    expect(progress.filter((line) => line.startsWith('play'))).toHaveLength(12)
    expect(progress.at(-1)).toBe('judge 15/15')
  })

  it('plays every competitor with the same reset seeds, sampling seeds, prompt and generation options', async () => {
    const players = competitors().filter((competitor) => competitor.id !== 'flaky')
    const prompt = (view: { observation: string }) => [
      { role: 'system' as const, content: 'Stay in character.' },
      { role: 'user' as const, content: view.observation },
    ]
    const result = await runCharacterArena(baseOptions({ competitors: players, prompt, concurrency: 3 }))
    const seedsOf = (policy: ScriptedPolicy) => policy.requests.map((request) => request.seed).sort()
    const reference = seedsOf(players[0]!.policy)
    expect(reference).toHaveLength(contexts.length * 2)
    for (const { policy } of players) {
      expect(seedsOf(policy)).toEqual(reference)
      for (const request of policy.requests) {
        expect(request.messages![0]).toEqual({ role: 'system', content: 'Stay in character.' })
        expect(request).toMatchObject({ maxTokens: 32, temperature: 0.7 })
      }
    }
    for (const episode of result.trajectories) {
      expect(episode.trajectory?.seed).toBe(contexts.find((context) => context.id === episode.context)!.seed)
      expect(episode.trajectory?.id).not.toContain(episode.competitor) // blind ids for the judge
    }
    expect(result.failures).toEqual([])
  })

  it('records a judge that throws as a tie with its message', async () => {
    const players = competitors().filter((competitor) => competitor.id !== 'flaky')
    const result = await runCharacterArena(baseOptions({ competitors: players, judge: lengthJudge({ failIn: 'tavern' }) }))
    const tavern = result.comparisons.filter((comparison) => comparison.context === 'tavern')
    expect(tavern).toHaveLength(3)
    for (const comparison of tavern) expect(comparison).toMatchObject({ outcome: 'tie', error: expect.stringContaining('judge unreachable') })
    expect(result.report.standings.map((standing) => standing.player)).toEqual(['eloquent', 'plain', 'terse'])
    expect(result.markdown).toContain('3 comparisons are ties because the judge failed.')
  })

  it('throws a LudicError when every episode failed, naming the failures', async () => {
    const broken: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'broken',
      generate: async () => {
        throw new Error('no model loaded')
      },
    }
    const run = runCharacterArena(
      baseOptions({
        competitors: [
          { id: 'one', policy: broken },
          { id: 'two', policy: broken },
        ],
      }),
    )
    await expect(run).rejects.toThrow(LudicError)
    await expect(run).rejects.toThrow(/no model loaded/)
  })

  it('rejects bad options by name', async () => {
    const [first] = competitors()
    expect(await argumentOf(() => runCharacterArena(baseOptions({ competitors: [first!] })))).toBe('options.competitors')
    expect(await argumentOf(() => runCharacterArena(baseOptions({ competitors: [first!, first!] })))).toBe('options.competitors')
    expect(await argumentOf(() => runCharacterArena(baseOptions({ contexts: [] })))).toBe('options.contexts')
    expect(await argumentOf(() => runCharacterArena(baseOptions({ opponents: {} })))).toBe('options.opponents.user')
    expect(await argumentOf(() => runCharacterArena(baseOptions({ opponents: { user: user(), character: user() } })))).toBe('options.opponents.character')
    expect(await argumentOf(() => runCharacterArena(baseOptions({ role: 'narrator' })))).toBe('options.contexts.0.environment')
    expect(await argumentOf(() => runCharacterArena(baseOptions({ judge: {} as PairwiseJudgeV1 })))).toBe('options.judge')
    expect(await argumentOf(() => runCharacterArena(baseOptions({ bootstrap: { samples: 0 } })))).toBe('options.bootstrap.samples')
  })

  it('stops when aborted', async () => {
    const controller = new AbortController()
    controller.abort(new Error('stop the arena'))
    await expect(runCharacterArena(baseOptions({ signal: controller.signal }))).rejects.toThrow('stop the arena')
  })
})
