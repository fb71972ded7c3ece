import { createRandom, stepOutcomeSchema, type Random } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { legalActionsFromObservation } from './legal-actions.js'
import { createGame, gameIds } from './registry.js'

const garbage = [
  '',
  ' ',
  'x'.repeat(200_000),
  '['.repeat(50_000) + ']'.repeat(10),
  '\\boxed{'.repeat(20_000),
  '🃏 [béť] 你好 [𝔟𝔢𝔱] \u0000\u0007 [\uD800]',
  '[check] [bet] [nonsense]',
  '[0] [4] [Offer: 1 Wood -> 1 Gold] [??]',
  '\\boxed{}',
  '\\boxed{\\text{}}',
  '[]',
  '[ ]',
  '[-1]',
  '[1e3]',
  '[NaN]',
  '[Infinity]',
  '[Bid: -1, 3]',
  '[Offer: 1e9 Wood -> 1 Gold]',
  '{"action": "bet"}',
  '<answer>bet</answer>',
  // Inputs that make naive regular expressions backtrack for minutes:
  `[Offer: 1 Wood -> 1 Gold${'.'.repeat(100_000)}x]`,
  `[bid 1${' '.repeat(100_000)}x]`,
  `[${'9'.repeat(100_000)}]`,
  `[Offer: ${'9'.repeat(50_000)} Wood -> 1 Gold]`,
  `[Offer: 1 ${'W'.repeat(50_000)} -> 1 Gold]`,
  `[Offer: ${'1 Wood, '.repeat(20_000)}-> 1 Gold]`,
  `[${' ,'.repeat(100_000)}]`,
  `\\boxed{${'\\text{'.repeat(20_000)}bet${'}'.repeat(20_001)}`,
]

/** A random response: with probability `garbageRate` garbage or a mangled move, else a legal move (maybe boxed or in text). */
function randomResponse(random: Random, legal: readonly string[], garbageRate: number): string {
  const alphabet = ['[', ']', '{', '}', '\\boxed{', ' ', '\n', 'a', 'Z', '9', '-', ':', ',', '->', 'é', '🂡', '\u200b', 'Wood', 'Gold', 'bid', 'call']
  switch (random.nextFloat() < garbageRate ? random.nextInt(4) : 4) {
    case 0:
      return random.choice(garbage)
    case 1:
      return Array.from({ length: random.nextInt(40) }, () => random.choice(alphabet)).join('')
    case 2: // a legal move buried in junk, maybe followed by more brackets
      return `${random.choice(alphabet)} ${random.choice(legal)} ${random.nextInt(2) === 0 ? '' : random.choice(['[x]', '\\boxed{?}', ']', '['])}`
    case 3: // a legal move, mangled
      return random.choice(legal).replace(/[a-z0-9]/i, random.choice(alphabet))
    default:
      return random.nextInt(2) === 0 ? `\\boxed{${random.choice(legal)}}` : random.choice(legal)
  }
}

describe('garbage actions', () => {
  it.each(gameIds)('are invalid-action outcomes at the first turn of %s', (id) => {
    const environment = createGame(id)
    for (const action of garbage) {
      environment.reset(0)
      const started = performance.now()
      const outcome = stepOutcomeSchema.parse(environment.step(action))
      expect(performance.now() - started, JSON.stringify(action.slice(0, 40))).toBeLessThan(1_000) // linear time: the quadratic versions took 5–15 s
      expect(outcome, JSON.stringify(action.slice(0, 40))).toMatchObject({ done: true, truncated: false, info: { invalidAction: true } })
      expect(Object.values(outcome.rewards).sort()).toEqual([-1.5, 0.5])
      expect(outcome.info.reason!.length).toBeLessThan(400)
    }
  })

  it.each(gameIds)('never make %s throw (seeded fuzz)', (id) => {
    const environment = createGame(id)
    const random = createRandom(2024)
    let invalid = 0
    let natural = 0
    for (let episode = 0; episode < 150; episode++) {
      let view = environment.reset(episode)
      const garbageRate = episode % 3 === 0 ? 0 : 0.3 // every third episode plays legal moves only, to reach the end
      for (;;) {
        const legal = view.legalActions ?? legalActionsFromObservation(view.observation)
        const outcome = stepOutcomeSchema.parse(environment.step(randomResponse(random, legal, garbageRate)))
        if (outcome.info.invalidAction) {
          invalid++
          expect(outcome.rewards[view.role]).toBe(-1.5)
          expect(Object.values(outcome.rewards).sort()).toEqual([-1.5, 0.5])
        } else if (outcome.done && !outcome.truncated) {
          natural++
          expect(outcome.rewards.player0! + outcome.rewards.player1!).toBe(0) // every game here is zero-sum
        }
        if (outcome.done) {
          expect(() => environment.step('[anything]')).toThrow(/after the episode ended/)
          break
        }
        view = outcome.next!
      }
    }
    expect(invalid).toBeGreaterThan(0)
    expect(natural).toBeGreaterThan(0)
  })
})
