import { createScriptedPolicy } from '@ludic/core/test'
import { describe, expect, it } from 'vitest'
import { createKuhnPoker } from './kuhn-poker.js'
import { playEpisode } from './play-episode.js'
import { gamePrompts } from './game-prompts.js'
import { createTicTacToe } from './tic-tac-toe.js'

describe('playEpisode', () => {
  it('asks each role its move with the rendered prompt and sums the rewards', async () => {
    const player0 = createScriptedPolicy({ replies: ['[0]', '[1]', '[2]'] })
    const player1 = createScriptedPolicy({ replies: ['\\boxed{[3]}', '[4]'] })
    const result = await playEpisode(createTicTacToe(), { player0, player1 }, { seed: 0, prompt: 'spiral', maxTokens: 64 })
    expect(result).toMatchObject({ rewards: { player0: 1, player1: -1 }, turns: 5, truncated: false, invalidAction: false })
    expect(result.actions.map((action) => action.role)).toEqual(['player0', 'player1', 'player0', 'player1', 'player0'])
    expect(player0.requests[0]!.messages![0]!.content.startsWith(gamePrompts.spiral.slice(0, 40))).toBe(true)
    expect(player0.requests[0]!.maxTokens).toBe(64)
  })

  it('reports invalid actions and truncation', async () => {
    const babbler = createScriptedPolicy({ replies: () => 'hmm' })
    const invalid = await playEpisode(createKuhnPoker(), { player0: babbler, player1: babbler }, { seed: 0 })
    expect(invalid).toMatchObject({ invalidAction: true, turns: 1, rewards: { player1: -1.5, player0: 0.5 } })
    const checker = createScriptedPolicy({ replies: () => '[check]' })
    const truncated = await playEpisode(createKuhnPoker({ maxTurns: 3 }), { player0: checker, player1: checker }, { seed: 0 })
    expect(truncated).toMatchObject({ truncated: true, turns: 3, rewards: { player0: 0, player1: 0 } })
  })

  it('needs a policy for every role', async () => {
    await expect(playEpisode(createTicTacToe(), { player0: createScriptedPolicy({ replies: [] }) }, { seed: 0 })).rejects.toThrow(/player1/)
  })
})
