import { describe, expect, it } from 'vitest'
import { opponentRegistry } from './registries.js'

describe('the opponent registry', () => {
  it("plays the legal moves of the request's turn, whatever the prompt says, and refuses a request without one", async () => {
    const random = opponentRegistry.create('random', { seed: 1 })
    const turn = { environmentId: 'coin-v0', role: 'player0', legalActions: ['[heads]', '[tails]'] }
    const prompt = [{ role: 'user' as const, content: 'Available actions: [rock], [paper]\n[check], [bet]' }]
    const completions = await random.generate([1, 2, 3, 4, 5, 6, 7, 8].map((seed) => ({ messages: prompt, maxTokens: 4, seed, turn })))
    expect(new Set(completions.map((completion) => completion.text))).toEqual(new Set(['[heads]', '[tails]']))
    await expect(random.generate([{ messages: prompt, maxTokens: 4 }])).rejects.toMatchObject({ name: 'InvalidArgumentError', argument: 'request.turn' })
    expect(() => opponentRegistry.create('oracle', { seed: 0 })).toThrow(/random, minimax, nash/)
  })
})
