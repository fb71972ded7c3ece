import * as tf from '@tensorflow/tfjs-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { expectNoLeaks } from '@ludic/tensors/test'
import { createOrpoLoss } from './orpo-loss.js'
import { expectClose, expectGradientMatchesFiniteDifferences, initBackendUnderTest, randomTensor } from './test/fixtures.js'

beforeAll(initBackendUnderTest)

const logSigmoid = (x: number): number => (x >= 0 ? -Math.log1p(Math.exp(-x)) : x - Math.log1p(Math.exp(x)))
const logOdds = (averageLogprob: number): number => averageLogprob - Math.log(1 - Math.exp(averageLogprob))

describe('createOrpoLoss', () => {
  it('is NLL(chosen) − λ·mean(log σ(log odds_c − log odds_r)), as TRL', () => {
    const inputs = {
      chosenLogprobs: tf.tensor1d([-3, -12]),
      rejectedLogprobs: tf.tensor1d([-8, -6]),
      chosenLengths: tf.tensor1d([4, 6], 'int32'),
      rejectedLengths: tf.tensor1d([5, 3], 'int32'),
    }
    const { loss, metrics } = createOrpoLoss({ beta: 0.25 })(inputs)
    const ratios = [logOdds(-3 / 4) - logOdds(-8 / 5), logOdds(-12 / 6) - logOdds(-6 / 3)].map(logSigmoid)
    const nll = 15 / 10
    expectClose(loss.dataSync(), [nll - (0.25 * (ratios[0]! + ratios[1]!)) / 2], 'orpo')
    expectClose([metrics.nllLoss, metrics.logOddsRatio], [nll, (ratios[0]! + ratios[1]!) / 2], 'metrics')
    expect(metrics.rewardsAccuracy).toBe(0.5)
    tf.dispose([loss, ...Object.values(inputs)])
  })

  it('has the finite-difference gradient, does not leak, names bad arguments', async () => {
    const logprobs = tf.tidy(() => tf.neg(tf.abs(randomTensor([2, 4], 3, 4, -6))))
    const chosenLengths = tf.tensor1d([3, 8, 1, 12], 'int32')
    const rejectedLengths = tf.tensor1d([5, 2, 9, 4], 'int32')
    const loss = createOrpoLoss()
    const f = (x: tf.Tensor): tf.Scalar => {
      const [chosenLogprobs, rejectedLogprobs] = tf.unstack(x) as [tf.Tensor, tf.Tensor]
      return loss({ chosenLogprobs, rejectedLogprobs, chosenLengths, rejectedLengths }).loss
    }
    expectGradientMatchesFiniteDifferences(f, logprobs, { label: 'orpo', step: 1e-3 })
    await expectNoLeaks(() => tf.grad(f)(logprobs), { label: 'orpo gradient' })
    const certain = tf.tensor1d([-1, 0, -2, -3])
    expect(() => loss({ chosenLogprobs: certain, rejectedLogprobs: certain, chosenLengths, rejectedLengths })).toThrow(
      /'inputs.chosenLogprobs'.*negative mean.*\[1\]/,
    )
    tf.dispose([logprobs, chosenLengths, rejectedLengths, certain])
  })
})
