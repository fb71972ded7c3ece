import { describe, expect, it } from 'vitest'
import { extractMove, matchLegalAction, normalizeMove } from './action.js'

describe('extractMove', () => {
  it.each([
    ['[bet]', 'bet'],
    ['I think I should bet. [bet]', 'bet'],
    ['[check] no wait, [bet]', 'bet'],
    ['reasoning... \\boxed{[bet]}', 'bet'],
    ['\\boxed{bet}', 'bet'],
    ['\\boxed{ \\text{[call]} }', 'call'],
    ['\\boxed{\\text{fold}}', 'fold'],
    ['[check] then \\boxed{[bet]} and later [fold]', 'bet'], // the last \boxed wins over later brackets
    ['\\boxed{[check]} ... \\boxed{[bet]}', 'bet'],
    ['\\boxed{} [bet]', 'bet'], // an empty box is no answer
    ['\\boxed{[bet]', 'bet'], // unclosed box: fall back to the last bracket of the text
    ['\\boxed{{nested} [Offer: 3 Wood -> 2 Gold]}', 'Offer: 3 Wood -> 2 Gold'],
    ['[Offer: 3 Wood,\n 2 Gold -> 1 Gold]', 'Offer: 3 Wood,\n 2 Gold -> 1 Gold'],
    ['[[bet]]', 'bet'],
    ['[]', ''],
  ])('%j → %j', (text, move) => {
    expect(extractMove(text)).toBe(move)
  })

  it.each(['', 'bet', 'no brackets at all', '\\boxed{}', '] [', '\\boxed{'])('%j has no move', (text) => {
    expect(extractMove(text)).toBeUndefined()
  })

  it('is linear on huge inputs', () => {
    // Sized so that a quadratic scan (4·10¹² steps for the first) could not end within the test's timeout, while a
    // linear one takes a fraction of a second: the timeout catches the blow-up, no clock is read.
    const huge = `${'[['.repeat(2_000_000)}${'\\boxed{'.repeat(500_000)}`
    expect(extractMove(huge)).toBeUndefined()
    expect(extractMove(`${'x'.repeat(10_000_000)}[bet]`)).toBe('bet')
  })
})

describe('matchLegalAction', () => {
  const kuhn = ['[check]', '[bet]']
  it.each([
    ['[bet]', '[bet]'],
    ['[BET]', '[bet]'],
    ['[  Bet ]', '[bet]'],
    ['\\boxed{Check}', '[check]'],
    ['[call]', undefined],
    ['bet', undefined],
    ['[be t]', undefined],
  ])('%j plays %j', (text, action) => {
    expect(matchLegalAction(text, kuhn)).toBe(action)
  })

  it('ignores spacing around ":" and ","', () => {
    expect(normalizeMove('[Bid:  3 ,4]')).toBe('bid:3,4')
    expect(matchLegalAction('[bid:3,4]', ['[Bid: 3, 4]'])).toBe('[Bid: 3, 4]')
  })
})
