import { advantageEstimators } from '@ludic/advantages'
import { expect, it } from 'vitest'
import { main } from './main.js'

it('swaps GRPO, RLOO, REINFORCE++ and a registered custom estimator on one batch', () => {
  const lines: string[] = []
  const result = main({ log: (line) => lines.push(line) })
  const lastTokens = (name: string) => result[name]!.map((row) => row[row.length - 1]!)

  // GRPO: prompt-a rewards [1, 0, 1]: mean 2/3, unbiased std √(1/3); prompt-b [0, 0, 1] mirrors it.
  const std = Math.sqrt(1 / 3) + 1e-6
  const grpo = [1 / 3 / std, -2 / 3 / std, 1 / 3 / std, -1 / 3 / std, -1 / 3 / std, 2 / 3 / std]
  lastTokens('grpo').forEach((value, sample) => expect(value).toBeCloseTo(grpo[sample]!, 5))
  // RLOO: each reward minus the mean of the other two responses to its prompt.
  expect(lastTokens('rloo')).toEqual([0.5, -1, 0.5, -0.5, -0.5, 1])
  // REINFORCE++ (γ = 1): every token carries its response's outcome, whitened over all 24 tokens.
  const tokens = result['reinforce++']!.flatMap((row) => [...row])
  expect(tokens).toHaveLength(24)
  expect(tokens.reduce((sum, value) => sum + value, 0)).toBeCloseTo(0, 4)
  expect(lastTokens('reinforce++').map(Math.sign)).toEqual([1, -1, 1, -1, -1, 1])
  // The custom estimator, created by name with its options: 2 · (reward − 0.5).
  expect(lastTokens('batch-mean-baseline')).toEqual([1, -1, 1, -1, -1, 1])
  expect(advantageEstimators.names()).toContain('batch-mean-baseline')

  expect(lines).toHaveLength(5)
  expect(lines[1]).toMatch(/^grpo +\+0\.577 −1\.155 \+0\.577 −0\.577 −0\.577 \+1\.155/)
})
