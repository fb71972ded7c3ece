import { availableParallelism } from 'node:os'
import { createRandom, InvalidArgumentError, type Random } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import '../node-platform.js'
import { logSoftmaxAt, sampleToken, sampleTokens, type SamplingParameters, type SamplingRow } from './sampling.js'
import { samplingHelperRows } from './sampling-workers.js'

const greedy: SamplingParameters = { temperature: 0, topK: 0, topP: 1, minP: 0 }
const sampled: SamplingParameters = { temperature: 1, topK: 0, topP: 1, minP: 0 }

describe('sampleToken with excluded tokens (min_tokens)', () => {
  const logits = Float32Array.of(0, 1, 5, 2, 9, 8) // two rows of vocabulary 3: [0, 1, 5] and [2, 9, 8]

  it('greedy takes the best token outside the exclusion, and records the unfiltered log-probability', () => {
    expect(sampleToken(logits, 0, 3, greedy, createRandom(0)).token).toBe(2)
    const { token, logprob } = sampleToken(logits, 3, 3, greedy, createRandom(0), new Set([1]))
    expect(token).toBe(2) // row [2, 9, 8] without id 1: id 2 (logit 8)
    expect(logprob).toBeCloseTo(logSoftmaxAt(logits.subarray(3, 6), 2), 12)
  })

  it('a draw never picks an excluded token, even far above the others at a low temperature, and records log softmax(logits / T)', () => {
    const row = Float32Array.of(30, 1, 0.5, 0) // id 0 would win almost surely, and at T = 0.01 every other weight underflows against it
    const random = createRandom(5)
    const temperature = 0.01
    const counts = [0, 0, 0, 0]
    for (let draw = 0; draw < 200; draw++) {
      const { token, logprob } = sampleToken(row, 0, 4, { ...sampled, temperature }, random, new Set([0]))
      counts[token]!++
      expect(logprob).toBeCloseTo(
        (row[token]! - 30) / temperature - Math.log(1 + Math.exp(-29 / temperature) + Math.exp(-29.5 / temperature) + Math.exp(-30 / temperature)),
        6,
      )
    }
    expect(counts[0]).toBe(0)
    expect(counts[1]).toBeGreaterThan(0)
  })

  it('top-k counts the tokens left after the exclusion (vLLM masks before the filters)', () => {
    const row = Float32Array.of(9, 8, 1, 0)
    const random = createRandom(1)
    for (let draw = 0; draw < 50; draw++) expect(sampleToken(row, 0, 4, { ...sampled, topK: 1 }, random, new Set([0])).token).toBe(1)
  })

  it('draws exactly as before without an exclusion or with an empty one (same seed, same tokens and log-probabilities)', () => {
    const row = Float32Array.from({ length: 50 }, (_, index) => Math.sin(index) * 3)
    const parameters = { temperature: 0.7, topK: 20, topP: 0.9, minP: 0.01 }
    const [a, b] = [createRandom(9), createRandom(9)]
    for (let draw = 0; draw < 30; draw++) expect(sampleToken(row, 0, 50, parameters, a, new Set())).toEqual(sampleToken(row, 0, 50, parameters, b))
  })

  it('refuses an exclusion that leaves no token to draw', () => {
    expect(() => sampleToken(logits, 0, 3, sampled, createRandom(0), new Set([0, 1, 2, 7]))).toThrow(InvalidArgumentError)
    expect(() => sampleToken(logits, 0, 3, greedy, createRandom(0), new Set([0, 1, 2]))).toThrow(/Invalid argument 'excluded'.*leaves none of the 3 tokens/)
  })
})

describe("sampleTokens: a step's rows at once", () => {
  it("gives sampleToken's tokens and log-probabilities bit for bit, each row's random drawn in the same order, with the helper thread drawing some", async () => {
    const vocab = 1024
    const rows = 96
    const random = createRandom(3)
    const logits = Float32Array.from({ length: rows * vocab }, () => 8 * random.nextNormal())
    // Mostly plain rows (the helper's), and greedy, filtered and excluding ones; rows 10–19 share one Random.
    const parameters = (index: number): SamplingParameters =>
      index % 11 === 3
        ? greedy
        : index % 13 === 5
          ? { temperature: 0.7, topK: 20, topP: 0.9, minP: 0 }
          : index % 7 === 2
            ? { ...sampled, temperature: 1.3 }
            : sampled
    const batch = (seed: number): SamplingRow[] => {
      const shared = createRandom(seed * 1000 + 999)
      return Array.from({ length: rows }, (_, index) => ({
        offset: index * vocab,
        parameters: parameters(index),
        random: index >= 10 && index < 20 ? shared : createRandom(seed * 1000 + index),
        excluded: index % 17 === 4 ? new Set([0, 1, 2]) : undefined,
      }))
    }
    const oneByOne = (seed: number) => batch(seed).map((row) => sampleToken(logits, row.offset, vocab, row.parameters, row.random as Random, row.excluded))
    // The helper thread starts on first use and takes rows once it runs: try until it has drawn some (one CPU: none).
    const before = samplingHelperRows()
    const helped = availableParallelism() >= 2
    for (let attempt = 0; attempt < (helped ? 200 : 3) && samplingHelperRows() === before; attempt++) {
      expect(sampleTokens(logits, vocab, batch(attempt))).toEqual(oneByOne(attempt))
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    if (helped) expect(samplingHelperRows()).toBeGreaterThan(before)
    for (let seed = 500; seed < 505; seed++) expect(sampleTokens(logits, vocab, batch(seed))).toEqual(oneByOne(seed))
    if (helped) expect(samplingHelperRows()).toBeGreaterThan(before + 5 * 30)
    else expect(samplingHelperRows()).toBe(before)
  })

  it('refuses an exclusion that leaves no token, naming it, as sampleToken does', () => {
    const row: SamplingRow = { offset: 0, parameters: sampled, random: createRandom(1), excluded: new Set([0, 1]) }
    expect(() => sampleTokens(Float32Array.of(1, 2), 2, [row])).toThrow(InvalidArgumentError)
  })
})
