/**
 * Device reads and time of the loss calls a PPO step makes (a policy loss and the KL term, loss and
 * gradient, then their metrics read once), on the CPU and WebAssembly backends. A quick measurement, not a
 * timed test; compare runs made side by side on one machine:
 *
 *   npx tsx packages/objectives/bench/loss-reads.ts [--backends cpu,wasm] [--calls 200] [--rounds 3]
 */
import * as tf from '@tensorflow/tfjs-core'
import { createRandom } from '@ludic/core'
import { initTensors } from '@ludic/tensors'
import {
  createPolicyLoss,
  klLoss,
  policyLossNames,
  readLossMetrics,
  type KlLossMetricTensors,
  type PolicyLoss,
  type PolicyLossMetricTensors,
} from '../src/index.js'

const option = (name: string, fallback: string): string => {
  const index = process.argv.indexOf(`--${name}`)
  return index >= 0 ? process.argv[index + 1]! : fallback
}
const backends = option('backends', 'cpu,wasm').split(',') as ('cpu' | 'wasm')[]
const calls = Number(option('calls', '200'))
const rounds = Number(option('rounds', '3'))
const shapes: [number, number][] = [
  [8, 64],
  [32, 512],
]

// Counts device reads: synchronous (dataSync, arraySync) and asynchronous (data, array).
const reads = { sync: 0, async: 0 }
const prototype = tf.Tensor.prototype as unknown as Record<string, (...args: unknown[]) => unknown>
for (const [method, kind] of [
  ['dataSync', 'sync'],
  ['arraySync', 'sync'],
  ['data', 'async'],
  ['array', 'async'],
] as const) {
  const original = prototype[method]!
  prototype[method] = function (this: unknown, ...args: unknown[]) {
    reads[kind]++
    return original.apply(this, args)
  }
}
function countReads<T>(run: () => T): [T, string] {
  reads.sync = 0
  reads.async = 0
  const result = run()
  return [result, `${reads.sync} sync + ${reads.async} async`]
}

function normal(shape: [number, number], seed: number, scale: number): tf.Tensor2D {
  const random = createRandom(seed)
  return tf.tensor2d(
    Float32Array.from({ length: shape[0] * shape[1] }, () => random.nextNormal() * scale),
    shape,
  )
}

for (const backend of backends) {
  await initTensors({ backend, verbose: false })
  for (const shape of shapes) {
    const [rows, tokens] = shape
    const oldLogprobs = tf.tidy(() => tf.neg(tf.abs(normal(shape, 1, 1))))
    const logprobs = tf.tidy(() => tf.add(oldLogprobs, normal(shape, 2, 0.2)))
    const referenceLogprobs = tf.tidy(() => tf.add(oldLogprobs, normal(shape, 3, 0.2)))
    const advantages = normal(shape, 4, 1)
    const mask = tf.tensor2d(
      Float32Array.from({ length: rows * tokens }, (_, index) => (index % tokens < tokens - (Math.floor(index / tokens) % 7) ? 1 : 0)),
      shape,
    )
    const inputs = { logprobs, oldLogprobs, advantages, mask }

    // Reads per loss call (inside the tidy the trainer computes its loss in) and per read of its metrics.
    const perLoss: string[] = []
    for (const name of policyLossNames) {
      const policyLoss = createPolicyLoss(name, (name === 'truncated-ppo' ? { generationBudget: tokens / 2 } : {}) as never)
      let metrics: PolicyLossMetricTensors | undefined
      const [, inCall] = countReads(() => tf.tidy(() => void (metrics = policyLoss(inputs).metrics)))
      reads.sync = 0
      reads.async = 0
      await readLossMetrics(metrics!)
      perLoss.push(`${name} ${inCall} (read: ${reads.sync} sync + ${reads.async} async)`)
    }
    let kl: KlLossMetricTensors | undefined
    const [, klReads] = countReads(() => tf.tidy(() => void (kl = klLoss({ logprobs, referenceLogprobs, mask }).metrics)))
    await readLossMetrics(kl!)
    console.log(`${backend} [${rows}, ${tokens}] reads per call: ${perLoss.join(', ')}; klLoss ${klReads}`)

    // Time of a step's loss work: ppo-clip + klLoss, loss and gradient, the gradient and metrics read.
    const policyLoss: PolicyLoss = createPolicyLoss('ppo-clip', { clipLow: 0.2, clipHigh: 0.28 })
    const step = async (): Promise<void> => {
      let policy: PolicyLossMetricTensors | undefined
      let klMetrics: KlLossMetricTensors | undefined
      const gradient = tf.grad((current: tf.Tensor) =>
        tf.tidy(() => {
          const pg = policyLoss({ ...inputs, logprobs: current })
          const term = klLoss({ logprobs: current, referenceLogprobs, mask })
          policy = pg.metrics
          klMetrics = term.metrics
          return tf.add(pg.loss, tf.mul(0.01, term.loss)) as tf.Scalar
        }),
      )(logprobs)
      await gradient.data()
      gradient.dispose()
      await readLossMetrics({ policy: policy!, kl: klMetrics })
    }
    for (let index = 0; index < 5; index++) await step()
    const before = tf.memory().numTensors
    const times: number[] = []
    for (let round = 0; round < rounds; round++) {
      const start = performance.now()
      for (let index = 0; index < calls; index++) await step()
      times.push((performance.now() - start) / calls)
    }
    times.sort((a, b) => a - b)
    console.log(
      `${backend} [${rows}, ${tokens}] ppo-clip + klLoss, gradient, metrics read: ${times[Math.floor(times.length / 2)]!.toFixed(3)} ms per step ` +
        `(median of ${rounds} rounds of ${calls}; fastest ${times[0]!.toFixed(3)}); leaked ${tf.memory().numTensors - before} tensors`,
    )
    tf.dispose([oldLogprobs, logprobs, referenceLogprobs, advantages, mask])
  }
}
