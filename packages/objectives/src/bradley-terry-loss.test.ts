import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConformanceFixture } from '@ludic/conformance-fixtures'
import { expectNoLeaks } from '@ludic/tensors/test'
import { createBradleyTerryLoss } from './bradley-terry-loss.js'
import { ErrorTracker, expectClose, expectGradientMatchesFiniteDifferences, initBackendUnderTest, randomTensor } from './test/fixtures.js'

beforeAll(initBackendUnderTest)

const fixture = loadConformanceFixture<
  { rewards_chosen: number[]; rewards_rejected: number[]; margin?: number[] },
  { center_rewards_coefficient: number | null },
  { loss: number; accuracy: number; mean_margin: number; grad_rewards_chosen: number[]; grad_rewards_rejected: number[] }
>('trl/reward_bt_loss')
const tracker = new ErrorTracker()
afterAll(() => {
  console.info(tracker.summary('trl/reward_bt_loss.json'))
})

describe('createBradleyTerryLoss', () => {
  it('matches TRL RewardTrainer case by case (loss, accuracy, margin, gradients)', () => {
    for (const testCase of fixture.cases) {
      const { inputs, params } = testCase
      const outputs = testCase.outputs!
      const loss = createBradleyTerryLoss({ centerRewardsCoefficient: params.center_rewards_coefficient })
      const rewardsChosen = tf.tensor1d(inputs.rewards_chosen)
      const rewardsRejected = tf.tensor1d(inputs.rewards_rejected)
      const margin = inputs.margin === undefined ? undefined : tf.tensor1d(inputs.margin)
      const result = loss({ rewardsChosen, rewardsRejected, ...(margin === undefined ? {} : { margin }) })
      expectClose(result.loss.dataSync(), [outputs.loss], `${testCase.id} loss`, { tracker })
      expectClose([result.metrics.accuracy, result.metrics.margin], [outputs.accuracy, outputs.mean_margin], `${testCase.id} accuracy, mean_margin`, {
        tracker,
      })
      const [gradientChosen, gradientRejected] = tf.grads(
        (chosen: tf.Tensor, rejected: tf.Tensor) =>
          loss({ rewardsChosen: chosen, rewardsRejected: rejected, ...(margin === undefined ? {} : { margin }) }).loss,
      )([rewardsChosen, rewardsRejected]) as [tf.Tensor, tf.Tensor]
      expectClose(gradientChosen.dataSync(), outputs.grad_rewards_chosen, `${testCase.id} grad_rewards_chosen`, { tracker })
      expectClose(gradientRejected.dataSync(), outputs.grad_rewards_rejected, `${testCase.id} grad_rewards_rejected`, { tracker })
      tf.dispose([rewardsChosen, rewardsRejected, result.loss, gradientChosen, gradientRejected, ...(margin === undefined ? [] : [margin])])
    }
  })

  it('has the finite-difference gradient, does not leak, names bad arguments', async () => {
    const rewards = randomTensor([2, 6], 4, 2)
    const margin = randomTensor([6], 5, 0.5)
    const loss = createBradleyTerryLoss({ centerRewardsCoefficient: 0.01 })
    const f = (x: tf.Tensor): tf.Scalar => {
      const [rewardsChosen, rewardsRejected] = tf.unstack(x) as [tf.Tensor, tf.Tensor]
      return loss({ rewardsChosen, rewardsRejected, margin }).loss
    }
    expectGradientMatchesFiniteDifferences(f, rewards, { label: 'bradley-terry' })
    await expectNoLeaks(() => tf.grad(f)(rewards), { label: 'bradley-terry gradient' })
    const chosen = tf.zeros([6])
    expect(() => loss({ rewardsChosen: chosen, rewardsRejected: tf.zeros([5]) })).toThrow(/'inputs.rewardsRejected'/)
    expect(() => createBradleyTerryLoss({ centerRewardsCoefficient: -1 })).toThrow(/options.centerRewardsCoefficient/)
    tf.dispose([rewards, margin, chosen])
  })
})
