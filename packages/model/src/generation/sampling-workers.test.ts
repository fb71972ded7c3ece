// isolated-test: a fresh process-wide sampling helper, whose start-up is what is tested.
import { availableParallelism } from 'node:os'
import { createRandom } from '@ludic/core'
import { expect, it } from 'vitest'
import '../node-platform.js'
import { sampleToken, sampleTokens, type SamplingRow } from './sampling.js'
import { samplingHelperRows } from './sampling-workers.js'

it("takes rows once it runs even when steps grow while its thread starts (a second buffer before it read the first), with sampleToken's tokens", async () => {
  const vocab = 4096 // 16 rows of it are enough work for the helper
  const random = createRandom(9)
  const logits = Float32Array.from({ length: 128 * vocab }, () => 6 * random.nextNormal())
  const parameters = { temperature: 1, topK: 0, topP: 1, minP: 0 }
  const batch = (rows: number, seed: number): SamplingRow[] =>
    Array.from({ length: rows }, (_, index) => ({ offset: index * vocab, parameters, random: createRandom(seed * 1000 + index) }))
  const expected = (rows: number, seed: number) => batch(rows, seed).map((row) => sampleToken(logits, row.offset, vocab, row.parameters, row.random))
  // Back to back, the thread still starting: the first call starts it, the second hands it a buffer for 8 rows, the
  // third one for 64 before it can have read the first.
  expect(sampleTokens(logits, vocab, batch(16, 0))).toEqual(expected(16, 0))
  expect(sampleTokens(logits, vocab, batch(16, 1))).toEqual(expected(16, 1))
  expect(sampleTokens(logits, vocab, batch(128, 2))).toEqual(expected(128, 2))
  const helped = availableParallelism() >= 2
  for (let attempt = 3; attempt < (helped ? 300 : 6) && samplingHelperRows() === 0; attempt++) {
    expect(sampleTokens(logits, vocab, batch(128, attempt))).toEqual(expected(128, attempt))
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  if (helped) expect(samplingHelperRows()).toBeGreaterThan(0)
  else expect(samplingHelperRows()).toBe(0)
})
