import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConformanceFixture } from '@ludic/conformance-fixtures'
import { expectNoLeaks } from '@ludic/tensors/test'
import type { AggregationMode } from './aggregate-loss.js'
import { valueLoss } from './value-loss.js'
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
  { vpreds: number[][]; returns: number[][]; values: number[][]; response_mask: number[][] },
  {
    cliprange_value: number
    loss_agg_mode: AggregationMode
    dp_size?: number
    batch_num_tokens?: number
    global_batch_size?: number
    loss_scale_factor?: number
  },
  { vf_loss: number; vf_clipfrac: number; grad_vpreds: number[][] }
>('verl/compute_value_loss')
const tracker = new ErrorTracker()
afterAll(() => {
  console.info(tracker.summary('verl/compute_value_loss.json'))
})

describe('valueLoss', () => {
  it('matches verl compute_value_loss case by case (loss, clip fraction, gradient)', () => {
    for (const testCase of fixture.cases) {
      const { params } = testCase
      const tensors = {
        values: tensor2d(testCase.inputs.vpreds),
        oldValues: tensor2d(testCase.inputs.values),
        returns: tensor2d(testCase.inputs.returns),
        mask: tensor2d(testCase.inputs.response_mask),
      }
      const options = {
        clipRangeValue: params.cliprange_value,
        aggregation: params.loss_agg_mode,
        dataParallelSize: params.dp_size ?? 1,
        globalTokenCount: params.batch_num_tokens,
        globalBatchSize: params.global_batch_size,
        lossScaleFactor: params.loss_scale_factor,
      }
      const { loss, metrics } = valueLoss(tensors, options)
      expectClose(loss.dataSync(), [testCase.outputs!.vf_loss], `${testCase.id} vf_loss`, { tracker })
      expectClose([metrics.valueClipFraction], [testCase.outputs!.vf_clipfrac], `${testCase.id} vf_clipfrac`, { tracker })
      const gradient = tf.grad((values: tf.Tensor) => valueLoss({ ...tensors, values }, options).loss)(tensors.values)
      expectClose(gradient.dataSync(), flat(testCase.outputs!.grad_vpreds), `${testCase.id} grad_vpreds`, { tracker })
      tf.dispose([loss, gradient, ...Object.values(tensors)])
    }
  })

  it('has the finite-difference gradient, does not leak, names bad arguments', async () => {
    const values = randomTensor([3, 4], 1)
    const oldValues = tf.tidy(() => tf.add(values, randomTensor([3, 4], 2, 0.3)))
    const returns = randomTensor([3, 4], 3)
    const mask = prefixMask([4, 2, 3], 4)
    const f = (x: tf.Tensor): tf.Scalar => valueLoss({ values: x, oldValues, returns, mask }, { clipRangeValue: 0.2 }).loss
    expectGradientMatchesFiniteDifferences(f, values, { label: 'valueLoss', step: 1e-3 })
    const { loss, metrics } = valueLoss({ values, oldValues, returns, mask }, { clipRangeValue: 0.2 })
    expect(metrics.valueClipFraction).toBeGreaterThan(0)
    expect(metrics.valueLoss).toBeCloseTo(loss.dataSync()[0]!, 6)
    await expectNoLeaks(() => tf.grad(f)(values), { label: 'valueLoss gradient' })
    expect(() => valueLoss({ values, oldValues, returns: tf.zeros([3]), mask })).toThrow(/'inputs.returns'/)
    expect(() => valueLoss({ values, oldValues, returns, mask }, { clipRangeValue: -1 })).toThrow(/options.clipRangeValue/)
    tf.dispose([values, oldValues, returns, mask, loss])
  })
})
