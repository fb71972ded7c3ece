import { describe, expect, it } from 'vitest'
import { legalMovesOf, opponentRegistry } from './registries.js'

describe('the random opponent', () => {
  it("reads the legal moves from the game's text, the added available-actions line, or a terse move list", async () => {
    expect(legalMovesOf('Coin game. Pick a side.\nAvailable actions: [heads], [tails]')).toEqual(['[heads]', '[tails]'])
    expect(legalMovesOf('[Player 1] [bet]\n[fold], [call]\ncard Q')).toEqual(['[fold]', '[call]'])
    expect(() => legalMovesOf('no moves here')).toThrow(/No legal actions/)
    const random = opponentRegistry.create('random', { seed: 1 })
    const [completion] = await random.generate([{ messages: [{ role: 'user', content: '[check], [bet]\ncard K' }], maxTokens: 4 }])
    expect(['[check]', '[bet]']).toContain(completion!.text)
    expect(() => opponentRegistry.create('oracle', { seed: 0 })).toThrow(/random, minimax, nash/)
  })
})
