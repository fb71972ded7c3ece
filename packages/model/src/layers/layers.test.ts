import * as tf from '@tensorflow/tfjs-core'
import { expectNoLeaks } from '@ludic/tensors/test'
import { beforeAll, describe, expect, it } from 'vitest'
import { initTestBackend } from '../test/init-test-backend.js'
import { rmsNorm } from './rms-norm.js'
import { applyRotary, inverseFrequencies, rotaryTables } from './rotary-embedding.js'
import { swiGlu } from './swiglu.js'

beforeAll(initTestBackend)

/** Largest absolute difference between two tensors, relative to the larger magnitude of `expected`. */
function relativeError(actual: tf.Tensor, expected: tf.Tensor): number {
  return tf.tidy(() => tf.div(tf.max(tf.abs(tf.sub(actual, expected))), tf.maximum(tf.max(tf.abs(expected)), 1e-12)).dataSync()[0]!)
}

const random = (shape: number[], seed: number) => tf.randomNormal(shape, 0, 1, 'float32', seed)

describe('layers with written-out gradients', () => {
  it('rmsNorm: values and gradients equal autodiff of the formula', async () => {
    await expectNoLeaks(() =>
      tf.tidy(() => {
        const x = random([3, 5, 8], 1)
        const weight = random([8], 2)
        const upstream = random([3, 5, 8], 3)
        const reference = (input: tf.Tensor, scale: tf.Tensor) => tf.mul(tf.mul(input, tf.rsqrt(tf.add(tf.mean(tf.square(input), -1, true), 1e-5))), scale)
        const loss = (f: typeof reference) => (input: tf.Tensor, scale: tf.Tensor) => tf.sum(tf.mul(f(input, scale), upstream))
        expect(Array.from(rmsNorm(x, weight, 1e-5).dataSync())).toEqual(Array.from(reference(x, weight).dataSync()))
        const [dx, dw] = tf.grads(loss((input, scale) => rmsNorm(input, scale, 1e-5)))([x, weight])
        const [expectedDx, expectedDw] = tf.grads(loss(reference))([x, weight])
        expect(dw!.shape).toEqual([8])
        expect(relativeError(dx!, expectedDx!)).toBeLessThan(1e-5)
        expect(relativeError(dw!, expectedDw!)).toBeLessThan(1e-5)
      }),
    )
  })

  it('swiGlu: silu(gate) · up of the fused projection, gradient equal to autodiff', async () => {
    await expectNoLeaks(() =>
      tf.tidy(() => {
        const gateUp = random([6, 10], 4) as tf.Tensor2D
        const upstream = random([6, 5], 5)
        const reference = (input: tf.Tensor) => {
          const [gate, up] = tf.split(input, 2, -1) as [tf.Tensor, tf.Tensor]
          return tf.mul(tf.mul(gate, tf.sigmoid(gate)), up)
        }
        expect(Array.from(swiGlu(gateUp).dataSync())).toEqual(Array.from(reference(gateUp).dataSync()))
        const gradient = tf.grad((input: tf.Tensor) => tf.sum(tf.mul(swiGlu(input as tf.Tensor2D), upstream)))(gateUp)
        const expected = tf.grad((input: tf.Tensor) => tf.sum(tf.mul(reference(input), upstream)))(gateUp)
        expect(gradient.shape).toEqual([6, 10])
        expect(relativeError(gradient, expected)).toBeLessThan(1e-5)
      }),
    )
  })

  it('applyRotary: (x₁ cos − x₂ sin, x₂ cos + x₁ sin) to the bit, and its gradient', async () => {
    await expectNoLeaks(() =>
      tf.tidy(() => {
        const [batch, heads, time, headDim] = [2, 3, 4, 8]
        const inverse = inverseFrequencies(headDim, 10_000, null)
        const positions = Int32Array.from({ length: batch * time }, (_, index) => (index * 7) % 11)
        const { cos, sin } = rotaryTables(inverse, positions, batch, time)
        const x = random([batch, heads, time, headDim], 6)
        const reference = (input: tf.Tensor) => {
          const halfCos = tf.slice(cos, [0, 0, 0, 0], [-1, -1, -1, headDim / 2])
          const halfSin = tf.slice(sin, [0, 0, 0, headDim / 2], [-1, -1, -1, headDim / 2])
          const [first, second] = tf.split(input, 2, -1) as [tf.Tensor, tf.Tensor]
          return tf.concat([tf.sub(tf.mul(first, halfCos), tf.mul(second, halfSin)), tf.add(tf.mul(second, halfCos), tf.mul(first, halfSin))], -1)
        }
        expect(Array.from(applyRotary(x, cos, sin).dataSync())).toEqual(Array.from(reference(x).dataSync()))
        const upstream = random([batch, heads, time, headDim], 7)
        const gradient = tf.grad((input: tf.Tensor) => tf.sum(tf.mul(applyRotary(input, cos, sin), upstream)))(x)
        const expected = tf.grad((input: tf.Tensor) => tf.sum(tf.mul(reference(input), upstream)))(x)
        expect(relativeError(gradient, expected)).toBeLessThan(1e-6)
      }),
    )
  })
})
