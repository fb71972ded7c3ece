import * as tf from '@tensorflow/tfjs-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { expectNoLeaks } from '@ludic/tensors/test'
import { createPolicyLoss } from './create-policy-loss.js'
import { readLossMetrics } from './loss-metrics.js'
import type { PolicyLossMetricTensors } from './policy-loss.js'
import { buildTruncatedPpoInputs } from './truncated-ppo.js'
import { expectClose, initBackendUnderTest } from './test/fixtures.js'

beforeAll(initBackendUnderTest)

/**
 * Two responses, budget 2 tokens:
 * - row 0 finished after 2 tokens with reward 1 on its last token;
 * - row 1 goes on to 4 tokens (reward 2 at the end, not known at the cut): it is cut after 2 tokens and
 *   bootstrapped with the critic's value of the state after them, V = 0.7.
 */
function rollout() {
  return {
    tokenRewards: tf.tensor2d([
      [0, 1, 0, 0],
      [0, 0, 0, 2],
    ]),
    values: tf.tensor2d([
      [0.5, 0.6, 9, 9],
      [0.2, 0.3, 0.7, 0.9],
    ]),
    mask: tf.tensor2d([
      [1, 1, 0, 0],
      [1, 1, 1, 1],
    ]),
  }
}

describe('truncated PPO (T-PPO)', () => {
  it('builds the cut mask and EGAE advantages by hand (γ = 1, λ = 1)', () => {
    const batch = rollout()
    const built = buildTruncatedPpoInputs(batch, { generationBudget: 2, whiten: false })
    // Row 0: δ1 = 1 − 0.6 = 0.4, δ0 = 0.6 − 0.5 = 0.1 → Â = [0.5, 0.4]. Row 1: δ1 = 0.7 − 0.3 = 0.4,
    // δ0 = 0.3 − 0.2 = 0.1 → Â = [0.5, 0.4]; the reward 2 beyond the budget is dropped.
    expectClose(built.advantages.dataSync(), [0.5, 0.4, 0, 0, 0.5, 0.4, 0, 0], 'advantages')
    expectClose(built.returns.dataSync(), [1, 1, 0, 0, 0.7, 0.7, 0, 0], 'returns')
    expect(Array.from(built.mask.dataSync())).toEqual([1, 1, 0, 0, 1, 1, 0, 0])
    expect(Array.from(built.valueMask.dataSync())).toEqual([1, 1, 0, 0, 0, 0, 0, 0])
    expect(built.truncated).toEqual([false, true])
    tf.dispose([...Object.values(batch), built.mask, built.advantages, built.returns, built.valueMask])
  })

  it('discounts (γ = 0.9, λ = 0.5), takes explicit bootstrap values and generator cuts, whitens', () => {
    const batch = rollout()
    const discounted = buildTruncatedPpoInputs(batch, { generationBudget: 2, gamma: 0.9, lambda: 0.5, whiten: false })
    // Row 0: δ1 = 0.4, δ0 = 0.9·0.6 − 0.5 = 0.04 → Â0 = 0.04 + 0.45·0.4 = 0.22.
    // Row 1: δ1 = 0.9·0.7 − 0.3 = 0.33, δ0 = 0.9·0.3 − 0.2 = 0.07 → Â0 = 0.07 + 0.45·0.33 = 0.2185.
    expectClose(discounted.advantages.dataSync(), [0.22, 0.4, 0, 0, 0.2185, 0.33, 0, 0], 'discounted advantages')
    const bootstrapValues = tf.tensor1d([0, 1.3])
    const bootstrapped = buildTruncatedPpoInputs({ ...batch, bootstrapValues }, { generationBudget: 2, whiten: false })
    expectClose(bootstrapped.advantages.dataSync(), [0.5, 0.4, 0, 0, 1.1, 1.0, 0, 0], 'bootstrapped advantages')
    // A row the generator stopped at the budget (no token beyond it) needs a bootstrap value.
    const cutMask = tf.tensor2d([
      [1, 1, 0, 0],
      [1, 1, 0, 0],
    ])
    expect(() => buildTruncatedPpoInputs({ ...batch, mask: cutMask, finished: [true, false] }, { generationBudget: 2 })).toThrow(
      /'rollout.bootstrapValues'.*row 1/,
    )
    const generatorCut = buildTruncatedPpoInputs({ ...batch, mask: cutMask, finished: [true, false], bootstrapValues }, { generationBudget: 2, whiten: false })
    expect(generatorCut.truncated).toEqual([false, true])
    const whitened = buildTruncatedPpoInputs(batch, { generationBudget: 2 })
    const raw = [0.5, 0.4, 0.5, 0.4]
    const mean = raw.reduce((a, b) => a + b) / 4
    const variance = raw.reduce((total, value) => total + (value - mean) ** 2, 0) / 3
    const expected = raw.map((value) => (value - mean) / Math.sqrt(variance + 1e-8))
    expectClose(whitened.advantages.dataSync(), [expected[0]!, expected[1]!, 0, 0, expected[2]!, expected[3]!, 0, 0], 'whitened')
    for (const built of [discounted, bootstrapped, generatorCut, whitened]) tf.dispose([built.mask, built.advantages, built.returns, built.valueMask])
    tf.dispose([...Object.values(batch), bootstrapValues, cutMask])
  })

  it('the loss is PPO clip on the tokens before the budget', async () => {
    const batch = rollout()
    const built = buildTruncatedPpoInputs(batch, { generationBudget: 2, whiten: false })
    const oldLogprobs = tf.tensor2d([
      [-1, -2, -1, -1],
      [-0.5, -1.5, -3, -2],
    ])
    const logRatios = [0.05, -0.05, 0.5, 0.5, 0.1, 0.3, -0.7, 0.2] // the last tokens of each row are outside the budget
    const logprobs = tf.tidy(() => tf.add(oldLogprobs, tf.tensor2d(logRatios, [2, 4])))
    const policyLoss = createPolicyLoss('truncated-ppo', { generationBudget: 2, clipLow: 0.2, clipHigh: 0.2 })
    // Fed the full rollout mask: the loss cuts it at the budget itself.
    const inputs = { logprobs, oldLogprobs, advantages: built.advantages, mask: batch.mask }
    const result = policyLoss(inputs)
    const { loss } = result
    const metrics = await readLossMetrics(result.metrics)
    const advantages = [0.5, 0.4, 0.5, 0.4]
    const ratios = [0.05, -0.05, 0.1, 0.3].map(Math.exp)
    // ratio e^0.3 = 1.35 > 1.2 with A > 0: clipped to 1.2.
    const expected = -(advantages[0]! * ratios[0]! + advantages[1]! * ratios[1]! + advantages[2]! * ratios[2]! + advantages[3]! * 1.2) / 4
    expectClose(loss.dataSync(), [expected], 'truncated-ppo loss')
    expect(metrics.validTokens).toBe(4)
    expect(metrics.clippedHighTokens).toBe(1)
    expect(metrics.clipFraction).toBeCloseTo(1 / 4, 6)
    // The same as ppo-clip on the cut mask.
    expect(Array.from(result.clippedTokens.high.dataSync())).toEqual([0, 0, 0, 0, 0, 1, 0, 0])
    const reference = createPolicyLoss('ppo-clip', { clipLow: 0.2, clipHigh: 0.2 })({ ...inputs, mask: built.mask })
    expectClose(loss.dataSync(), reference.loss.dataSync(), 'ppo-clip on the cut mask')
    expect(await readLossMetrics(reference.metrics)).toEqual(metrics)
    const pending: PolicyLossMetricTensors[] = []
    const lossAt = (x: tf.Tensor): tf.Scalar => {
      const term = policyLoss({ ...inputs, logprobs: x })
      pending.push(term.metrics)
      return term.loss
    }
    const gradient = tf.grad(lossAt)(logprobs)
    expect(Array.from(gradient.dataSync()).map((value) => value !== 0)).toEqual([true, true, false, false, true, false, false, false])
    await expectNoLeaks(() => buildTruncatedPpoInputs(batch, { generationBudget: 2 }), { label: 'buildTruncatedPpoInputs' })
    await expectNoLeaks(
      async () => {
        const leakGradient = tf.grad(lossAt)(logprobs)
        for (const entry of pending.splice(0)) await readLossMetrics(entry)
        return leakGradient
      },
      { label: 'truncated-ppo gradient' },
    )
    tf.dispose([...Object.values(batch), built.mask, built.advantages, built.returns, built.valueMask, oldLogprobs, logprobs, loss, reference.loss, gradient])
    tf.dispose([result.clippedTokens.low, result.clippedTokens.high, reference.clippedTokens.low, reference.clippedTokens.high])
  })

  it('names bad arguments', () => {
    const batch = rollout()
    expect(() => buildTruncatedPpoInputs(batch, { generationBudget: 0 })).toThrow(/options.generationBudget/)
    expect(() => buildTruncatedPpoInputs(batch, { generationBudget: 2, gamma: 2 })).toThrow(/options.gamma/)
    expect(() => buildTruncatedPpoInputs({ ...batch, finished: [true] }, { generationBudget: 2 })).toThrow(/'rollout.finished'/)
    const single = tf.tensor2d([
      [1, 0, 0, 0],
      [0, 0, 0, 0],
    ])
    expect(() => buildTruncatedPpoInputs({ ...batch, mask: single }, { generationBudget: 2 })).toThrow(/at least 2 tokens to whiten/)
    tf.dispose([...Object.values(batch), single])
  })
})
