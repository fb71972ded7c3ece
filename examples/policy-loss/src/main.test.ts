import * as tf from '@tensorflow/tfjs-core'
import { expect, it } from 'vitest'
import { main } from './main.js'

it('the policy-loss example clips the token that moved too far and leaks nothing', async () => {
  await main(() => {}) // starts the backend
  const before = tf.memory().numTensors
  const { metrics, gradient } = await main(() => {})
  // Token [0][1] moved by +0.4 with a positive advantage: ratio e^0.4 ≈ 1.49 > 1.28, clipped, so only the KL term's
  // gradient 1 − e^(ref − logp), token-mean over the 5 valid tokens, weighted 0.001.
  expect(gradient[0]![1]).toBeCloseTo((0.001 * (1 - Math.exp(-0.9 - -0.3))) / 5, 6)
  // The masked token [1][2] gets no gradient at all.
  expect(gradient[1]![2]).toBe(0)
  // Clipped: [0][1] (ratio 1.49 > 1.28, A > 0) and [1][1] (ratio 0.74 < 0.8, A < 0): 2 of 5 valid tokens.
  expect(metrics.clipFraction).toBeCloseTo(2 / 5, 6)
  // verl's ppo_kl: the masked mean of old − new log-probs = −(0.1 + 0.4 − 0.1 + 0.1 − 0.3) / 5.
  expect(metrics.approxKl).toBeCloseTo(-0.04, 6)
  expect(tf.memory().numTensors).toBe(before)
})
