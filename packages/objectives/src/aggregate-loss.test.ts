import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InvalidArgumentError, ShapeError } from '@ludic/core'
import { loadConformanceFixture } from '@ludic/conformance-fixtures'
import { expectNoLeaks } from '@ludic/tensors/test'
import { aggregateLoss, aggregationModes, type AggregationMode } from './aggregate-loss.js'
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

interface AggregateCase {
  inputs: { loss_mat: number[][]; loss_mask: number[][] }
  params: { loss_agg_mode: AggregationMode; dp_size?: number; batch_num_tokens?: number; global_batch_size?: number; loss_scale_factor?: number }
  outputs: { loss: number; grad_loss_mat: number[][] }
}

const fixture = loadConformanceFixture<AggregateCase['inputs'], AggregateCase['params'], AggregateCase['outputs']>('verl/agg_loss')
const tracker = new ErrorTracker()
afterAll(() => {
  console.info(tracker.summary('verl/agg_loss.json'))
})

function optionsOf(params: AggregateCase['params']) {
  return {
    dataParallelSize: params.dp_size ?? 1,
    globalTokenCount: params.batch_num_tokens,
    globalBatchSize: params.global_batch_size,
    lossScaleFactor: params.loss_scale_factor,
  }
}

describe('aggregateLoss', () => {
  it('matches verl agg_loss case by case (values, gradients, errors)', () => {
    let compared = 0
    for (const testCase of fixture.cases) {
      const values = tensor2d(testCase.inputs.loss_mat)
      const mask = tensor2d(testCase.inputs.loss_mask)
      const options = optionsOf(testCase.params)
      if (testCase.error !== undefined) {
        expect(() => aggregateLoss(values, mask, testCase.params.loss_agg_mode, options), testCase.id).toThrow(InvalidArgumentError)
        expect(() => aggregateLoss(values, mask, testCase.params.loss_agg_mode, options), testCase.id).toThrow(/required when dp_size > 1/)
      } else {
        const outputs = testCase.outputs!
        const loss = aggregateLoss(values, mask, testCase.params.loss_agg_mode, options)
        expectClose(loss.dataSync(), [outputs.loss], `${testCase.id} loss`, { tracker })
        const gradient = tf.grad((x: tf.Tensor) => aggregateLoss(x, mask, testCase.params.loss_agg_mode, options))(values)
        expectClose(gradient.dataSync(), flat(outputs.grad_loss_mat), `${testCase.id} grad_loss_mat`, { tracker })
        tf.dispose([loss, gradient])
        compared++
      }
      tf.dispose([values, mask])
    }
    expect(compared).toBe(fixture.cases.filter((testCase) => testCase.error === undefined).length)
  })

  it('ignores values at masked positions, even NaN, in value and gradient', () => {
    const values = tf.tensor2d([
      [1, 2, Number.NaN],
      [4, Number.POSITIVE_INFINITY, 6],
    ])
    const mask = tf.tensor2d([
      [1, 1, 0],
      [1, 0, 1],
    ])
    for (const mode of aggregationModes) {
      const loss = aggregateLoss(values, mask, mode)
      expect(Number.isFinite(loss.dataSync()[0]), mode).toBe(true)
      const gradient = tf.grad((x: tf.Tensor) => aggregateLoss(x, mask, mode))(values)
      expect(Array.from(gradient.dataSync()).every(Number.isFinite), mode).toBe(true)
      tf.dispose([loss, gradient])
    }
    const tokenMean = aggregateLoss(values, mask, 'token-mean')
    expect(tokenMean.dataSync()[0]).toBeCloseTo(13 / 4, 6)
    const sequenceMean = aggregateLoss(values, mask, 'seq-mean-token-mean')
    expect(sequenceMean.dataSync()[0]).toBeCloseTo((1.5 + 5) / 2, 5)
    tf.dispose([values, mask, tokenMean, sequenceMean])
  })

  it('refuses to divide by zero and names bad arguments', () => {
    const values = tf.ones([2, 3])
    const empty = tf.zeros([2, 3])
    for (const mode of ['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'] as const) {
      expect(() => aggregateLoss(values, empty, mode), mode).toThrow(/no (valid token|sequence).*divide by zero/)
    }
    // token-sum has nothing to divide; a given global count makes an empty micro-batch fine.
    const sum = aggregateLoss(values, empty, 'token-sum')
    expect(sum.dataSync()[0]).toBe(0)
    const withCount = aggregateLoss(values, empty, 'token-mean', { globalTokenCount: 10 })
    expect(withCount.dataSync()[0]).toBe(0)
    expect(() => aggregateLoss(values, tf.ones([3, 2]), 'token-mean')).toThrow(ShapeError)
    expect(() => aggregateLoss(values, tf.fill([2, 3], 0.5), 'token-mean')).toThrow(/only 0 and 1/)
    expect(() => aggregateLoss(tf.ones([2, 3], 'int32'), empty, 'token-mean')).toThrow(/'values'.*float32/)
    expect(() => aggregateLoss(values, empty, 'token-average' as AggregationMode)).toThrow(/'mode'/)
    expect(() => aggregateLoss(values, tf.ones([2, 3]), 'token-mean', { dataParallelSize: 0 })).toThrow(/options.dataParallelSize/)
    const nan = tf.tensor2d([
      [Number.NaN, 1, 1],
      [1, 1, 1],
    ])
    expect(() => aggregateLoss(nan, tf.ones([2, 3]), 'token-mean')).toThrow(/'values'.*not finite at \[0, 0\]/)
    tf.dispose([values, empty, sum, withCount, nan])
  })

  it('has the finite-difference gradient and does not leak', async () => {
    const values = randomTensor([3, 5], 1)
    const mask = prefixMask([5, 2, 0], 5)
    for (const mode of aggregationModes) {
      expectGradientMatchesFiniteDifferences((x) => aggregateLoss(x, mask, mode), values, { label: mode })
      await expectNoLeaks(() => aggregateLoss(values, mask, mode), { label: `aggregateLoss ${mode}` })
      await expectNoLeaks(() => tf.grad((x: tf.Tensor) => aggregateLoss(x, mask, mode))(values), { label: `aggregateLoss ${mode} gradient` })
    }
    tf.dispose([values, mask])
  })
})
