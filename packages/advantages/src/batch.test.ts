import { createRandom, InvalidArgumentError, type AdvantageBatch } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { advantageEstimators } from './registry.js'
import { randomBatch } from './test/random-batch.js'

const valid = (): AdvantageBatch => ({
  tokenRewards: [Float32Array.of(0, 1), Float32Array.of(0, 0, 0), Float32Array.of(1), Float32Array.of(0, 0, 0, 0, 0, 0, 0, 1)],
  groupIds: ['a', 'a', 'b', 'b'],
  values: [Float32Array.of(0, 0), Float32Array.of(0, 0, 0), Float32Array.of(0), new Float32Array(8)],
})

/** Every estimator must reject these, naming the argument, sample and token. */
const badBatches: [string, (batch: AdvantageBatch) => unknown, RegExp][] = [
  [
    'a NaN reward',
    (batch) => {
      batch.tokenRewards[3]![7] = Number.NaN
      return batch
    },
    /'batch\.tokenRewards\[3\]\[7\]' \(value: NaN\): must be a finite number/,
  ],
  [
    'an infinite reward',
    (batch) => {
      batch.tokenRewards[1]![0] = Number.POSITIVE_INFINITY
      return batch
    },
    /'batch\.tokenRewards\[1\]\[0\]' \(value: Infinity\)/,
  ],
  [
    'an infinite value',
    (batch) => {
      batch.values![2]![0] = Number.NEGATIVE_INFINITY
      return batch
    },
    /'batch\.values\[2\]\[0\]'/,
  ],
  [
    'values of the wrong length',
    (batch) => ({ ...batch, values: [...batch.values!.slice(0, 3), new Float32Array(7)] }),
    /'batch\.values\[3\]'.*7 entries for 8 tokens/,
  ],
  ['group ids of the wrong length', (batch) => ({ ...batch, groupIds: ['a', 'a', 'b'] }), /'batch\.groupIds'.*3 entries for 4 samples/],
  ['roles of the wrong length', (batch) => ({ ...batch, roles: ['x'] }), /'batch\.roles'.*1 entries for 4 samples/],
  [
    'a mask of the wrong length',
    (batch) => ({ ...batch, tokenMasks: batch.tokenRewards.map((row) => new Uint8Array(row.length + 1).fill(1)) }),
    /'batch\.tokenMasks\[0\]'/,
  ],
  [
    'a mask with no valid token',
    (batch) => ({ ...batch, tokenMasks: batch.tokenRewards.map((row, sample) => new Uint8Array(row.length).fill(sample === 1 ? 0 : 1)) }),
    /'batch\.tokenMasks\[1\]'.*no valid token|'batch\.tokenMasks\[1\]'.*masks every token/,
  ],
  [
    'a mask that is not 0 or 1',
    (batch) => ({ ...batch, tokenMasks: batch.tokenRewards.map((row) => new Uint8Array(row.length).fill(2)) }),
    /'batch\.tokenMasks\[0\]\[0\]'.*must be 0 or 1/,
  ],
  [
    'rewards that are not a Float32Array',
    (batch) => ({ ...batch, tokenRewards: [[0, 1], ...batch.tokenRewards.slice(1)] }),
    /'batch\.tokenRewards\[0\]'.*Float32Array/,
  ],
  ['an empty batch', () => ({ tokenRewards: [], groupIds: [] }), /'batch\.tokenRewards'.*at least one sample/],
  ['a NaN greedy baseline', (batch) => ({ ...batch, baselineRewards: [0, Number.NaN, 0, 0] }), /'batch\.baselineRewards\[1\]'/],
  ['a negative turn index', (batch) => ({ ...batch, turnIndices: [0, -1, 0, 0] }), /'batch\.turnIndices\[1\]'/],
  ['not a batch at all', () => undefined, /'batch'/],
]

describe('batch validation, for every built-in estimator', () => {
  for (const name of advantageEstimators.names()) {
    for (const [what, makeBad, message] of badBatches) {
      it(`${name} rejects ${what}`, () => {
        const estimator = advantageEstimators.create(name)
        const bad = makeBad(valid()) as AdvantageBatch
        expect(() => estimator.estimate(bad)).toThrow(InvalidArgumentError)
        expect(() => estimator.estimate(bad)).toThrow(message)
      })
    }
  }
})

describe('outputs, for every built-in estimator on seeded random batches', () => {
  it('are finite float32 arrays shaped like the token rewards, and leave the batch untouched', () => {
    const random = createRandom(6)
    for (let trial = 0; trial < 30; trial++) {
      const batch = randomBatch(random, {
        samples: 2 + random.nextInt(12),
        maxLength: 10,
        groups: 1 + random.nextInt(3),
        masks: trial % 2 === 0,
        denseRewards: trial % 3 === 0,
      })
      const copy = structuredClone(batch)
      const hasGroupOfOne = batch.groupIds.some((id) => batch.groupIds.indexOf(id) === batch.groupIds.lastIndexOf(id))
      for (const name of advantageEstimators.names()) {
        if (name === 'grpo-passk' && hasGroupOfOne) continue // needs groups of two or more
        const { advantages, returns } = advantageEstimators.create(name).estimate(batch)
        for (const rows of [advantages, returns]) {
          expect(
            rows.map((row) => row.length),
            name,
          ).toEqual(batch.tokenRewards.map((row) => row.length))
          for (const row of rows) {
            expect(row).toBeInstanceOf(Float32Array)
            expect(row.every(Number.isFinite), name).toBe(true)
          }
        }
      }
      expect(batch).toEqual(copy)
    }
  })
})
