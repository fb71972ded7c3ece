import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConformanceFixture } from '@ludic/conformance-fixtures'
import { expectNoLeaks } from '@ludic/tensors/test'
import type { AggregationMode } from './aggregate-loss.js'
import { entropyBonus } from './entropy-bonus.js'
import {
  ErrorTracker,
  expectClose,
  expectGradientMatchesFiniteDifferences,
  flat,
  initBackendUnderTest,
  prefixMask,
  randomTensor,
  tensor2d,
} from './test/fixtures.js'

beforeAll(initBackendUnderTest)

const fixture = loadConformanceFixture<
  { logits: number[][][]; response_mask: number[][] },
  { loss_agg_mode: AggregationMode },
  { entropy_loss: number; token_entropy: number[][]; grad_logits: number[][][] }
>('verl/compute_entropy_loss')
const tracker = new ErrorTracker()
afterAll(() => {
  console.info(tracker.summary('verl/compute_entropy_loss.json'))
})

describe('entropyBonus', () => {
  it('matches verl compute_entropy_loss case by case, every aggregation mode, with gradient', () => {
    for (const testCase of fixture.cases) {
      const logits = tf.tensor3d(testCase.inputs.logits)
      const mask = tensor2d(testCase.inputs.response_mask)
      const options = { aggregation: testCase.params.loss_agg_mode }
      const { loss, metrics } = entropyBonus(logits, mask, options)
      expectClose(loss.dataSync(), [testCase.outputs!.entropy_loss], `${testCase.id} entropy_loss`, { tracker })
      expect(metrics.entropy).toBeCloseTo(loss.dataSync()[0]!, 6)
      const gradient = tf.grad((x: tf.Tensor) => entropyBonus(x, mask, options).loss)(logits)
      expectClose(gradient.dataSync(), flat(testCase.outputs!.grad_logits), `${testCase.id} grad_logits`, { tracker })
      tf.dispose([logits, mask, loss, gradient])
    }
  })

  it('has the finite-difference gradient, does not leak, names bad arguments', async () => {
    const logits = randomTensor([2, 3, 5], 8, 2)
    const mask = prefixMask([3, 1], 3)
    const f = (x: tf.Tensor): tf.Scalar => entropyBonus(x, mask, { aggregation: 'seq-mean-token-mean' }).loss
    expectGradientMatchesFiniteDifferences(f, logits, { label: 'entropyBonus' })
    await expectNoLeaks(() => entropyBonus(logits, mask).loss, { label: 'entropyBonus' })
    await expectNoLeaks(() => tf.grad(f)(logits), { label: 'entropyBonus gradient' })
    expect(() => entropyBonus(logits, tf.ones([2, 4]))).toThrow(/'mask'/)
    expect(() => entropyBonus(tf.ones([2, 3]), mask)).toThrow(/'logits'/)
    const nan = tf.tidy(() => tf.concat([tf.fill([1, 3, 5], Number.NaN), tf.zeros([1, 3, 5])]))
    expect(() => entropyBonus(nan, mask)).toThrow(/'logits'.*NaN or \+Infinity at token \[0, 0\]/)
    // NaN logits at a masked position are ignored.
    const maskedNan = tf.tidy(() => tf.concat([tf.zeros([1, 3, 5]), tf.fill([1, 3, 5], Number.NaN)]))
    const masked = entropyBonus(
      maskedNan,
      tf.tensor2d([
        [1, 1, 1],
        [0, 0, 0],
      ]),
    )
    expect(masked.metrics.entropy).toBeCloseTo(Math.log(5), 5)
    tf.dispose([logits, mask, nan, maskedNan, masked.loss])
  })
})
