import { describe, it } from 'vitest'
import * as tf from '@tensorflow/tfjs-core'
import '../backend/register-gradients.js'
import { compareWithCpu, expectAllClose, sampleValues } from './backend-comparison.js'
import { backendUnderTest } from './backend-under-test.js'

/**
 * Ops a transformer's training and sampling code reaches for beyond the two-layer model of
 * `transformer-training-step.test.ts`, forward and gradient, on the backend under test against the
 * CPU backend: a net for stock kernels that are missing or wrong on one backend.
 */
const values = (shape: number[], seed: number): tf.Tensor => tf.tensor(sampleValues(tf.util.sizeFromShape(shape), seed), shape)
const gradient = (f: (x: tf.Tensor) => tf.Tensor, x: tf.Tensor, upstream?: tf.Tensor): tf.Tensor => tf.grads(f)([x], upstream)[0]!

const cases: Record<string, () => Record<string, tf.Tensor>> = {
  'where with a broadcast mask': () => {
    const mask = tf.greater(values([3, 4], 1), 0)
    return {
      forward: tf.where(mask, values([3, 4], 2), values([1, 4], 3)),
      gradient: gradient((x) => tf.where(mask, x, tf.mul(x, 2)), values([3, 4], 4)),
    }
  },
  'rotary embedding (split, concat, sin, cos)': () => {
    const rotate = (x: tf.Tensor): tf.Tensor => {
      const [first, second] = tf.split(x, 2, -1)
      return tf.add(tf.mul(x, tf.cos(values([5, 8], 9))), tf.mul(tf.concat([tf.neg(second!), first!], -1), tf.sin(values([5, 8], 8))))
    }
    return { forward: rotate(values([2, 5, 8], 1)), gradient: gradient(rotate, values([2, 5, 8], 1), values([2, 5, 8], 4)) }
  },
  'tanh GELU': () => {
    const gelu = (x: tf.Tensor): tf.Tensor => tf.mul(tf.mul(x, 0.5), tf.add(1, tf.tanh(tf.mul(0.7978845608, tf.add(x, tf.mul(0.044715, tf.pow(x, 3)))))))
    return { forward: gelu(values([4, 6], 1)), gradient: gradient(gelu, values([4, 6], 1)) }
  },
  'max, argMax, logSumExp': () => ({
    max: tf.max(values([3, 4, 5], 2), [0, 2]),
    argMax: tf.cast(tf.argMax(values([4, 6], 1), -1), 'float32'),
    maxGradient: gradient((x) => tf.max(x, -1), values([4, 6], 1)),
    logSumExp: tf.logSumExp(values([4, 6], 1), 0),
    logSumExpGradient: gradient((x) => tf.logSumExp(x, -1), values([4, 6], 1)),
  }),
  'softmax over a transposed view': () => ({ gradient: gradient((x) => tf.softmax(tf.transpose(x)), values([4, 6], 1), values([6, 4], 2)) }),
  'cumsum (exclusive, reverse)': () => ({
    forward: tf.cumsum(values([3, 5], 1), 1, true, true),
    gradient: gradient((x) => tf.cumsum(x, 1), values([3, 5], 1)),
  }),
  'strided slice and pad': () => ({
    forward: tf.pad(tf.stridedSlice(values([3, 6], 1), [0, 1], [3, 5], [1, 2]), [
      [1, 0],
      [0, 2],
    ]),
    gradient: gradient(
      (x) =>
        tf.pad(tf.slice(x, [0, 1], [3, 4]), [
          [1, 0],
          [0, 2],
        ]),
      values([3, 6], 1),
    ),
  }),
  'tile and broadcastTo gradients': () => ({
    tile: gradient((x) => tf.mul(tf.tile(x, [2, 3]), values([4, 6], 3)), values([2, 2], 1)),
    broadcast: gradient((x) => tf.mul(tf.broadcastTo(x, [3, 4]), values([3, 4], 5)), values([1, 4], 2)),
  }),
  'gradient clipping by norm': () => {
    const clip = (x: tf.Tensor): tf.Tensor => tf.clipByValue(tf.div(x, tf.norm(x)), -0.2, 0.2)
    return { forward: clip(values([4, 5], 1)), gradient: gradient(clip, values([4, 5], 1)) }
  },
  'top-k': () => {
    const { values: top, indices } = tf.topk(values([3, 10], 1), 4)
    return { top, indices: tf.cast(indices, 'float32') }
  },
  'gather on an inner axis and with batch dimensions': () => {
    const indices = tf.tensor1d([2, 0, 2, 1], 'int32')
    return {
      forward: tf.gather(values([3, 4, 2], 1), indices, 1),
      gradient: gradient((x) => tf.gather(x, indices, 1), values([3, 4, 2], 1)),
      batched: tf.gather(
        values([2, 3, 4], 1),
        tf.tensor2d(
          [
            [1, 0],
            [2, 2],
          ],
          [2, 2],
          'int32',
        ),
        1,
        1,
      ),
    }
  },
  'mean and sum over several axes': () => ({
    gradient: gradient((x) => tf.add(tf.mean(x, [0, 2], true), tf.sum(x, [1], true)), values([2, 3, 4], 1)),
  }),
  'maximum, minimum, relu, leaky relu, squared difference': () => {
    const [left, right] = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.add(tf.maximum(x, y), tf.relu(tf.sub(x, y))))([values([5], 1), values([5], 2)])
    return {
      left: left!,
      right: right!,
      leaky: gradient((x) => tf.leakyRelu(tf.squaredDifference(x, 0.1), 0.2), values([6], 1)),
      minimum: gradient((x) => tf.minimum(tf.reverse(x, 1), 0), values([2, 5], 1)),
    }
  },
  'log-sigmoid, softplus, exp, log, abs, sign, sqrt, rsqrt': () => ({
    forward: tf.logSigmoid(values([6], 1)),
    softplus: gradient((x) => tf.add(tf.logSigmoid(x), tf.softplus(x)), values([6], 1)),
    elementwise: gradient((x) => tf.add(tf.log(tf.add(tf.abs(x), 1)), tf.mul(tf.exp(x), tf.sign(x))), values([6], 1)),
    roots: gradient((x) => tf.div(tf.sqrt(tf.add(tf.square(x), 1)), tf.add(tf.rsqrt(tf.add(tf.square(x), 2)), 3)), values([6], 1)),
  }),
  'stack, unstack, layer normalisation through moments': () => {
    const swap = (x: tf.Tensor): tf.Tensor => tf.stack(tf.unstack(x, 1).reverse(), 1)
    const normalise = (x: tf.Tensor): tf.Tensor => {
      const { mean, variance } = tf.moments(x, -1, true)
      return tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, 1e-5)))
    }
    return {
      swapped: gradient(swap, values([2, 3, 2], 1), values([2, 3, 2], 3)),
      normalised: normalise(values([3, 8], 1)),
      normaliseGradient: gradient(normalise, values([3, 8], 1), values([3, 8], 2)),
    }
  },
  'one-hot (int32 and float32), equal, range, linspace': () => ({
    integer: tf.cast(tf.oneHot(tf.tensor1d([0, 3, 2], 'int32'), 4), 'float32'),
    float: tf.oneHot(tf.tensor1d([1, 3, -1], 'int32'), 4, 2.5, -1, 'float32'),
    accuracy: tf.mean(tf.cast(tf.equal(tf.tensor1d([1, 2, 3], 'int32'), tf.tensor1d([1, 0, 3], 'int32')), 'float32')),
    range: tf.range(0, 5, 1, 'float32'),
    linspace: tf.linspace(0, 1, 5),
  }),
}

describe(`transformer ops on ${backendUnderTest()} equal the CPU backend`, () => {
  for (const [name, compute] of Object.entries(cases)) {
    it(name, async () => {
      expectAllClose(await compareWithCpu(compute), name)
    })
  }
})
