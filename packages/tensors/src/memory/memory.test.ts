import * as tf from '@tensorflow/tfjs-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { initTensors } from '../backend/init-tensors.js'
import { expectNoLeaks, TensorLeakError } from './no-leaks.js'
import { createTensorScope, withTensorScope } from './tensor-scope.js'

beforeAll(async () => {
  await initTensors({ backend: 'wasm', verbose: false })
})

describe('withTensorScope', () => {
  it('frees what it tracked across awaits and keeps what it returns', async () => {
    const before = tf.memory().numTensors
    const result = await withTensorScope(async (scope) => {
      const a = scope.track(tf.ones([2, 2]))
      await new Promise((resolve) => setTimeout(resolve, 1))
      const b = scope.tidy(() => tf.add(a, tf.scalar(1)))
      await Promise.resolve()
      return { sum: scope.tidy(() => tf.sum(b)), parts: [b] }
    })
    // sum and b survive (returned); a was freed.
    expect(tf.memory().numTensors).toBe(before + 2)
    expect(result.sum.dataSync()[0]).toBe(8)
    tf.dispose([result.sum, ...result.parts])
    expect(tf.memory().numTensors).toBe(before)
  })

  it("frees on error too, and concurrent scopes never free each other's tensors", async () => {
    const before = tf.memory().numTensors
    await expect(
      withTensorScope(async (scope) => {
        scope.track(tf.zeros([3]))
        throw new Error('boom')
      }),
    ).rejects.toThrow('boom')
    expect(tf.memory().numTensors).toBe(before)
    const slow = withTensorScope(async (scope) => {
      const x = scope.track(tf.ones([4]))
      await new Promise((resolve) => setTimeout(resolve, 5))
      return scope.tidy(() => tf.sum(x))
    })
    const fast = withTensorScope(async (scope) => scope.tidy(() => tf.sum(scope.track(tf.ones([2])))))
    const [slowSum, fastSum] = await Promise.all([slow, fast])
    expect(slowSum.dataSync()[0]).toBe(4)
    expect(fastSum.dataSync()[0]).toBe(2)
    tf.dispose([slowSum, fastSum])
    expect(tf.memory().numTensors).toBe(before)
  })

  it('keep and size', () => {
    const scope = createTensorScope()
    const [a, b] = scope.track([tf.ones([1]), tf.ones([1])])
    expect(scope.size).toBe(2)
    scope.keep(a)
    scope.dispose()
    expect(a.isDisposed).toBe(false)
    expect(b.isDisposed).toBe(true)
    a.dispose()
  })
})

describe('expectNoLeaks', () => {
  it('passes for tidy code, disposes returned tensors, and fails with the counts for leaky code', async () => {
    await expectNoLeaks(() => tf.tidy(() => tf.sum(tf.ones([10]))))
    await expectNoLeaks(async () => {
      const x = tf.ones([3])
      await x.data()
      x.dispose()
    })
    const leaked: tf.Tensor[] = []
    const error = await expectNoLeaks(
      () => {
        leaked.push(tf.ones([2]))
      },
      { label: 'leaky step' },
    ).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(TensorLeakError)
    expect((error as TensorLeakError).after - (error as TensorLeakError).before).toBe(1)
    expect((error as Error).message).toMatch(/^leaky step leaked 1 tensor\(s\)/)
    tf.dispose(leaked)
  })
})
