import * as tf from '@tensorflow/tfjs-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { expectNoLeaks } from '@ludic/tensors/test'
import { createSimpoLoss } from './simpo-loss.js'
import { expectClose, expectGradientMatchesFiniteDifferences, initBackendUnderTest, randomTensor } from './test/fixtures.js'

beforeAll(initBackendUnderTest)

const logSigmoid = (x: number): number => (x >= 0 ? -Math.log1p(Math.exp(-x)) : x - Math.log1p(Math.exp(x)))

describe('createSimpoLoss', () => {
  it('is −log σ(β·log π_c/|y_c| − β·log π_r/|y_r| − γ), with label smoothing', () => {
    const inputs = {
      chosenLogprobs: tf.tensor1d([-12, -30]),
      rejectedLogprobs: tf.tensor1d([-20, -10]),
      chosenLengths: tf.tensor1d([6, 10], 'int32'),
      rejectedLengths: tf.tensor1d([5, 4], 'int32'),
    }
    const { loss, metrics } = createSimpoLoss({ beta: 2, gamma: 0.8, labelSmoothing: 0.1 })(inputs)
    const logits = [2 * (-12 / 6) - 2 * (-20 / 5) - 0.8, 2 * (-30 / 10) - 2 * (-10 / 4) - 0.8]
    const expected = logits.map((z) => -0.9 * logSigmoid(z) - 0.1 * logSigmoid(-z))
    expectClose(loss.dataSync(), [(expected[0]! + expected[1]!) / 2], 'simpo')
    expect(metrics.rewardsAccuracy).toBe(0.5)
    expectClose([metrics.rewardsChosen], [(2 * -2 + 2 * -3) / 2], 'rewards chosen')
    tf.dispose([loss, ...Object.values(inputs)])
  })

  it('has the finite-difference gradient, does not leak, names bad arguments', async () => {
    const logprobs = randomTensor([2, 4], 1, 5, -20)
    const chosenLengths = tf.tensor1d([3, 8, 1, 12], 'int32')
    const rejectedLengths = tf.tensor1d([5, 2, 9, 4], 'int32')
    const loss = createSimpoLoss()
    const f = (x: tf.Tensor): tf.Scalar => {
      const [chosenLogprobs, rejectedLogprobs] = tf.unstack(x) as [tf.Tensor, tf.Tensor]
      return loss({ chosenLogprobs, rejectedLogprobs, chosenLengths, rejectedLengths }).loss
    }
    expectGradientMatchesFiniteDifferences(f, logprobs, { label: 'simpo' })
    await expectNoLeaks(() => tf.grad(f)(logprobs), { label: 'simpo gradient' })
    const zero = tf.tensor1d([3, 0, 1, 12], 'int32')
    expect(() => loss({ chosenLogprobs: tf.zeros([4]), rejectedLogprobs: tf.zeros([4]), chosenLengths: zero, rejectedLengths })).toThrow(
      /'inputs.chosenLengths'.*positive integer/,
    )
    tf.dispose([logprobs, chosenLengths, rejectedLengths, zero])
  })
})
