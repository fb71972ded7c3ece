import { LudicError, createRandom, type EnvironmentV1, type StepOutcome, type TurnView } from '@ludic/core'
import { matchLegalAction } from '@ludic/games'

/**
 * Nim: a pile of 5 to 12 stones (drawn from the reset seed); the players take 1, 2 or 3 stones in turn and
 * whoever takes the last stone wins (+1, the other −1). An unreadable or illegal move loses at once.
 */
export function createNim(options: { maxTake?: number } = {}): EnvironmentV1 {
  const maxTake = options.maxTake ?? 3
  const roles = ['player0', 'player1'] as const
  let stones = 0
  let player: 0 | 1 = 0
  let over = true

  const legalActions = () => Array.from({ length: Math.min(maxTake, stones) }, (_, index) => `[${index + 1}]`)
  const view = (): TurnView => ({
    role: roles[player],
    observation: `${stones} stones left; take the last one to win.\nYour available actions are: ${legalActions().join(', ')}`,
    legalActions: legalActions(),
    stateKey: `${roles[player]}|${stones} stones`, // the whole decision situation: equal keys, same situation (GiGPO)
  })
  const end = (winner: 0 | 1, reason: string, invalidAction = false): StepOutcome => {
    over = true
    const rewards = winner === 0 ? { player0: 1, player1: -1 } : { player0: -1, player1: 1 }
    return { done: true, truncated: false, rewards, info: { invalidAction, reason } }
  }

  return {
    specificationVersion: 'v1',
    id: 'nim-v0',
    roles,
    reset(seed) {
      stones = 5 + createRandom(seed).nextInt(8) // the same seed, the same pile
      player = 0
      over = false
      return view()
    },
    step(action) {
      if (over) throw new LudicError('nim-v0: step() after the end of the episode; call reset(seed)')
      const move = matchLegalAction(action, legalActions()) // '[2]', 'I take [2]' or '\boxed{2}' → '[2]'
      if (move === undefined) return end(player === 0 ? 1 : 0, `${roles[player]} played an illegal move`, true)
      stones -= Number(move.slice(1, -1))
      if (stones === 0) return end(player, `${roles[player]} took the last stone`)
      player = player === 0 ? 1 : 0
      return { done: false, truncated: false, next: view(), rewards: { player0: 0, player1: 0 }, info: {} }
    },
  }
}
