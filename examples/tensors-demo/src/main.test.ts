import { expect, it } from 'vitest'
import { main } from './main.js'

it('the tensors demo trains a bigram model without leaking tensors', async () => {
  const lines: string[] = []
  const result = await main({ steps: 60, log: (line) => lines.push(line) })
  expect(lines[0]).toMatch(/^backend: /)
  expect(result.lastLoss).toBeLessThan(result.firstLoss * 0.6)
  expect(result.leakedTensors).toBe(0)
  // The model learned the text's bigrams: nearly every bigram of the sample occurs in the text.
  const text = 'the cat sat on the mat and the dog sat on the log. '
  const bigrams = Array.from({ length: result.sample.length - 1 }, (_, index) => result.sample.slice(index, index + 2))
  const seen = bigrams.filter((bigram) => text.includes(bigram)).length
  expect(seen / bigrams.length).toBeGreaterThan(0.85)
  // Same seed, same run.
  const again = await main({ steps: 60, log: () => {} })
  expect(again.sample).toBe(result.sample)
})
