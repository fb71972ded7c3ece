import { createRandom, stepOutcomeSchema, turnContextOf, type Random } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { turnLegalActions } from './legal-actions.js'
import { createGame, gameIds } from './registry.js'

/**
 * Garbage responses; the long ones `scale` times their base length. At scale 10 they are ten times longer than
 * at 1: a linear parser takes ten times as long (a fraction of a second), a quadratic one a hundred times (the
 * quadratic versions took seconds at scale 1, so minutes, past the test's timeout). How long a case takes is not
 * asserted: a clock would measure the machine (it failed on busy ones), the test's timeout catches the blow-up.
 */
const garbageOf = (scale: number) => [
  '',
  ' ',
  'x'.repeat(200_000 * scale),
  '['.repeat(50_000 * scale) + ']'.repeat(10),
  '\\boxed{'.repeat(20_000 * scale),
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
  `[Offer: 1 Wood -> 1 Gold${'.'.repeat(100_000 * scale)}x]`,
  `[bid 1${' '.repeat(100_000 * scale)}x]`,
  `[${'9'.repeat(100_000 * scale)}]`,
  `[Offer: ${'9'.repeat(50_000 * scale)} Wood -> 1 Gold]`,
  `[Offer: 1 ${'W'.repeat(50_000 * scale)} -> 1 Gold]`,
  `[Offer: ${'1 Wood, '.repeat(20_000 * scale)}-> 1 Gold]`,
  `[${' ,'.repeat(100_000 * scale)}]`,
  `\\boxed{${'\\text{'.repeat(20_000 * scale)}bet${'}'.repeat(20_000 * scale + 1)}`,
]
const garbage = garbageOf(1)

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
  it.each(gameIds)('are invalid-action outcomes at the first turn of %s, in linear time (ten times the inputs that broke quadratic parsers)', (id) => {
    const environment = createGame(id)
    for (const action of garbageOf(10)) {
      environment.reset(0)
      const outcome = stepOutcomeSchema.parse(environment.step(action))
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
        const legal = turnLegalActions(turnContextOf(id, view))
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
