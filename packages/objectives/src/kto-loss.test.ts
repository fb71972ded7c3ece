import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConformanceFixture } from '@ludic/conformance-fixtures'
import { expectNoLeaks } from '@ludic/tensors/test'
import { createKtoLoss } from './kto-loss.js'
import { ErrorTracker, expectClose, expectGradientMatchesFiniteDifferences, initBackendUnderTest, randomTensor } from './test/fixtures.js'

beforeAll(initBackendUnderTest)

const fixture = loadConformanceFixture<
  { completion_logps: number[]; ref_completion_logps: number[]; labels: boolean[]; KL_logps: number[]; ref_KL_logps: number[] },
  { loss_type: 'kto' | 'apo_zero_unpaired'; beta: number; desirable_weight: number; undesirable_weight: number },
  { loss: number; losses: number[]; kl: number; chosen_rewards: number[]; rejected_rewards: number[]; grad_completion_logps: number[] }
>('trl/kto_loss')
const tracker = new ErrorTracker()
afterAll(() => {
  console.info(tracker.summary('trl/kto_loss.json'))
})

describe('createKtoLoss', () => {
  it('matches TRL KTOTrainer case by case (loss, losses, kl, rewards, gradient)', () => {
    for (const testCase of fixture.cases) {
      const { inputs, params } = testCase
      const outputs = testCase.outputs!
      const loss = createKtoLoss({
        lossType: params.loss_type,
        beta: params.beta,
        desirableWeight: params.desirable_weight,
        undesirableWeight: params.undesirable_weight,
      })
      const tensors = {
        logprobs: tf.tensor1d(inputs.completion_logps),
        referenceLogprobs: tf.tensor1d(inputs.ref_completion_logps),
        klLogprobs: tf.tensor1d(inputs.KL_logps),
        referenceKlLogprobs: tf.tensor1d(inputs.ref_KL_logps),
      }
      const labelTensor = tf.tensor1d(
        inputs.labels.map((label) => (label ? 1 : 0)),
        'bool',
      )
      const result = loss({ ...tensors, labels: testCase.id.endsWith('1') ? labelTensor : inputs.labels })
      expectClose(result.loss.dataSync(), [outputs.loss], `${testCase.id} loss`, { tracker })
      // TRL lists desirable examples first; Ludic keeps batch order.
      const reordered = [
        ...Array.from(result.losses).filter((_, index) => inputs.labels[index]),
        ...Array.from(result.losses).filter((_, index) => !inputs.labels[index]),
      ]
      expectClose(reordered, outputs.losses, `${testCase.id} losses`, { tracker })
      expectClose([result.metrics.kl], [outputs.kl], `${testCase.id} kl`, { tracker })
      expectClose(result.chosenRewards, outputs.chosen_rewards, `${testCase.id} chosen_rewards`, { tracker })
      expectClose(result.rejectedRewards, outputs.rejected_rewards, `${testCase.id} rejected_rewards`, { tracker })
      expect(result.metrics.chosenCount).toBe(outputs.chosen_rewards.length)
      const gradient = tf.grad((x: tf.Tensor) => loss({ ...tensors, logprobs: x, labels: inputs.labels }).loss)(tensors.logprobs)
      expectClose(gradient.dataSync(), outputs.grad_completion_logps, `${testCase.id} grad_completion_logps`, { tracker })
      tf.dispose([result.loss, gradient, labelTensor, ...Object.values(tensors)])
    }
  })

  it.each(['kto', 'apo_zero_unpaired'] as const)('%s: finite differences, no leaks, named errors', async (lossType) => {
    const logprobs = randomTensor([5], 1, 3, -30)
    const referenceLogprobs = randomTensor([5], 2, 3, -30)
    const klLogprobs = randomTensor([5], 3, 3, -30)
    const referenceKlLogprobs = randomTensor([5], 4, 3, -32)
    const labels = [true, false, true, true, false]
    const loss = createKtoLoss({ lossType, beta: 0.3, desirableWeight: 1.33, undesirableWeight: 0.75 })
    const f = (x: tf.Tensor): tf.Scalar => loss({ logprobs: x, referenceLogprobs, labels, klLogprobs, referenceKlLogprobs }).loss
    expectGradientMatchesFiniteDifferences(f, logprobs, { label: lossType })
    await expectNoLeaks(() => tf.grad(f)(logprobs), { label: `${lossType} gradient` })
    if (lossType === 'kto') {
      expect(() => loss({ logprobs, referenceLogprobs, labels })).toThrow(/'inputs.klLogprobs'.*required/)
    }
    expect(() => loss({ logprobs, referenceLogprobs, labels: [true], klLogprobs, referenceKlLogprobs })).toThrow(/'inputs.labels'/)
    const badLabels = tf.tensor1d([0, 2, 1, 1, 0], 'int32')
    expect(() => loss({ logprobs, referenceLogprobs, labels: badLabels, klLogprobs, referenceKlLogprobs })).toThrow(/'inputs.labels'.*0\/1/)
    tf.dispose([logprobs, referenceLogprobs, klLogprobs, referenceKlLogprobs, badLabels])
  })
})
