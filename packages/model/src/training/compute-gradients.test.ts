import * as tf from '@tensorflow/tfjs-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { initTensors } from '@ludic/tensors'
import { computeGradients } from './compute-gradients.js'

beforeAll(async () => {
  await initTensors({ backend: 'wasm', verbose: false })
})

describe('computeGradients', () => {
  it('keys the gradients by the parameters’ own names and frees everything else', () => {
    const parameters = new Map<string, tf.Variable>([
      [
        'model.layers.0.weight',
        tf.variable(
          tf.tensor2d([
            [1, 2],
            [3, 4],
          ]),
        ),
      ],
      ['model.layers.0.bias', tf.variable(tf.tensor1d([0.5, -0.5]))],
    ])
    const x = tf.tensor2d([[1, -1]])
    const before = tf.memory().numTensors
    const { loss, gradients } = computeGradients(
      () => tf.sum(tf.square(tf.add(tf.matMul(x, parameters.get('model.layers.0.weight')!), parameters.get('model.layers.0.bias')!))) as tf.Scalar,
      parameters,
    )
    // y = x·W + b = [-1.5, -2.5]; loss = Σ y² = 8.5; dL/dW = xᵀ·2y, dL/db = 2y
    expect(loss.dataSync()[0]).toBeCloseTo(8.5, 6)
    expect([...gradients.keys()]).toEqual(['model.layers.0.weight', 'model.layers.0.bias'])
    expect(Array.from(gradients.get('model.layers.0.weight')!.dataSync())).toEqual([-3, -5, 3, 5])
    expect(Array.from(gradients.get('model.layers.0.bias')!.dataSync())).toEqual([-3, -5])
    tf.dispose([loss, ...gradients.values()])
    expect(tf.memory().numTensors).toBe(before)
    tf.dispose([x, ...parameters.values()])
  })

  it('names the parameters the loss does not depend on, and leaks nothing then either', () => {
    const used = tf.variable(tf.tensor1d([1, 2]))
    const unused = tf.variable(tf.tensor1d([3]))
    const before = tf.memory().numTensors
    expect(() =>
      computeGradients(
        () => tf.sum(used) as tf.Scalar,
        new Map([
          ['used', used],
          ['lm_head.weight', unused],
        ]),
      ),
    ).toThrow(/the loss does not depend on lm_head\.weight/)
    expect(tf.memory().numTensors).toBe(before)
    expect(() => computeGradients(() => tf.sum(used) as tf.Scalar, new Map())).toThrow(/'parameters'/)
    tf.dispose([used, unused])
  })
})
