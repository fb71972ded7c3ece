import { describe, expect, it } from 'vitest'
import type { TrajectoryTurn } from './api.js'
import { tokenScale, tokenTitle, visibleToken } from './token-colours.js'

const turn = (fields: Partial<TrajectoryTurn>): TrajectoryTurn => ({
  index: 0,
  role: 'player0',
  observation: '',
  action: 'bet',
  rewards: {},
  invalidAction: false,
  trained: true,
  ...fields,
})

const alpha = (colour: string) => Number(/rgba\(.*, ([\d.]+)\)$/.exec(colour)?.[1])

describe('token colours', () => {
  const turns = [turn({ tokenIds: [1, 2, 3], advantages: [0.5, -1, 0], logprobs: [-0.01, -3, null], entropy: [0.2, 2, 1] })]

  it('colours advantages blue up and red down, saturating at the episode’s largest |advantage|', () => {
    const scale = tokenScale('advantage', turns)
    expect(scale.colour(0.5)).toMatch(/^rgba\(33, 102, 172, /)
    expect(scale.colour(-1)).toMatch(/^rgba\(178, 24, 43, /)
    expect(alpha(scale.colour(-1))).toBeGreaterThan(alpha(scale.colour(0.5)))
    expect(scale.legend).toMatchObject({ low: '−1', high: '+1' })
  })

  it('leaves tokens without a value (an untrained turn, a non-finite number) transparent', () => {
    const scale = tokenScale('logprob', turns)
    expect(scale.colour(undefined)).toBe('transparent')
    expect(scale.colour(null)).toBe('transparent')
    expect(scale.colour(Number.NaN)).toBe('transparent')
    expect(alpha(scale.colour(-3))).toBeGreaterThan(alpha(scale.colour(-0.01)))
  })

  it('does not divide by zero when an episode has no advantages', () => {
    const scale = tokenScale('advantage', [turn({})])
    expect(scale.colour(0)).toMatch(/^rgba\(/)
    expect(scale.legend.high).toBe('+1')
  })

  it('names every value of a token on hover', () => {
    expect(tokenTitle(turns[0]!, 1)).toBe('advantage -1 · log-prob -3 (p 0.050) · entropy 2 · token id 2')
    expect(tokenTitle(turns[0]!, 2)).toBe('advantage 0 · entropy 1 · token id 3')
  })

  it('makes whitespace tokens visible', () => {
    expect(visibleToken(' ')).toBe('·')
    expect(visibleToken('a\nb')).toBe('a↵\nb')
    expect(visibleToken('')).toBe('∅')
  })

  it('scales an episode of a million tokens (no spread of every value into one call)', () => {
    const count = 1_000_000
    const long = turn({
      tokenIds: new Array(count).fill(1),
      advantages: Array.from({ length: count }, (_, index) => (index === 7 ? -4 : 0.5)),
      entropy: new Array(count).fill(2),
    })
    expect(tokenScale('advantage', [long]).legend.high).toBe('+4')
    expect(tokenScale('entropy', [long]).legend.high).toBe('2 nats')
  })
})
