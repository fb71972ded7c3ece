/**
 * The README example of @ludic/objectives: a PPO-clip loss with DAPO's clip-higher and a low-variance KL
 * term, differentiated with respect to the policy's log-probabilities, with the metrics a trainer logs.
 */
import { pathToFileURL } from 'node:url'
import * as tf from '@tensorflow/tfjs-core'
import { initTensors } from '@ludic/tensors'
import { createPolicyLoss, klLoss, readLossMetrics, type KlLossMetricTensors, type PolicyLossMetricTensors } from '@ludic/objectives'

export async function main(log: (line: string) => void = console.log) {
  await initTensors({ verbose: false })
  const policyLoss = createPolicyLoss('ppo-clip', { clipLow: 0.2, clipHigh: 0.28 }) // DAPO clip-higher
  const oldLogprobs = tf.tensor2d([
    [-1.2, -0.7, -2.0],
    [-0.3, -1.1, -0.9],
  ]) // [batch, tokens]
  const referenceLogprobs = tf.tensor2d([
    [-1.0, -0.9, -2.2],
    [-0.4, -1.0, -1.0],
  ])
  const advantages = tf.tensor2d([
    [1, 1, 1],
    [-0.5, -0.5, 0],
  ])
  const mask = tf.tensor2d([
    [1, 1, 1],
    [1, 1, 0],
  ]) // 1 = response token that counts
  const logprobs = tf.tidy(() =>
    tf.add(
      oldLogprobs,
      tf.tensor2d([
        [0.1, 0.4, -0.1],
        [0.1, -0.3, 0],
      ]),
    ),
  ) // the policy moved
  let policyMetrics: PolicyLossMetricTensors | undefined
  let klMetrics: KlLossMetricTensors | undefined
  const gradient = tf.grad((current: tf.Tensor) => {
    const policy = policyLoss({ logprobs: current, oldLogprobs, advantages, mask }) // reads nothing from the device
    const kl = klLoss({ logprobs: current, referenceLogprobs, mask }, { estimator: 'low_var_kl' })
    policyMetrics = policy.metrics // scalar tensors that outlive the gradient's tidy
    klMetrics = kl.metrics
    return tf.add(policy.loss, tf.mul(0.001, kl.loss)) as tf.Scalar
  })(logprobs)
  const read = await readLossMetrics({ policy: policyMetrics!, kl: klMetrics! }) // one read after the gradient; frees them
  const metrics = { clipFraction: read.policy.clipFraction, approxKl: read.policy.approxKl, klLoss: read.kl.klLoss }
  const rows = gradient.arraySync() as number[][]
  log(`clip fraction ${metrics.clipFraction.toFixed(3)}, approx KL ${metrics.approxKl.toFixed(4)}, KL loss ${metrics.klLoss.toFixed(4)}`)
  log(`d loss / d logprobs: ${rows.map((row) => row.map((value) => value.toFixed(4)).join(' ')).join(' | ')}`)
  tf.dispose([oldLogprobs, referenceLogprobs, advantages, mask, logprobs, gradient])
  return { metrics, gradient: rows }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error: unknown) => {
    console.error(error)
    process.exitCode = 1
  })
}
