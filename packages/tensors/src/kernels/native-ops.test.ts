import * as tf from '@tensorflow/tfjs-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { InvalidArgumentError } from '@ludic/core'
import { initTensors } from '../backend/init-tensors.js'
import { backendUnderTest } from './backend-under-test.js'
import { NativeVariable, hasNativeOps } from './native-ops.js'

beforeAll(async () => {
  await initTensors({ backend: backendUnderTest(), verbose: false })
})

const native = backendUnderTest() === 'tensorflow'

describe(`NativeVariable (${backendUnderTest()})`, () => {
  if (!native) {
    it('is refused without the native backend, naming it', () => {
      expect(hasNativeOps()).toBe(false)
      const value = tf.zeros([2])
      expect(() => new NativeVariable(value)).toThrow(InvalidArgumentError)
      expect(() => new NativeVariable(value)).toThrow(/'backend' \(value: "wasm"\).*needs the 'tensorflow' backend/)
      value.dispose()
    })
    return
  }

  it('holds, reads and updates a value; a read taken before an update keeps its value; dispose frees what it made', () => {
    expect(hasNativeOps()).toBe(true)
    const before = tf.memory().numTensors
    const initial = tf.tensor2d([1, -2, 3, 4, 0.5, -6], [2, 3])
    const variable = new NativeVariable(initial)
    initial.dispose() // the variable keeps the buffer
    const first = variable.read()
    expect(first.shape).toEqual([2, 3])
    expect(Array.from(first.dataSync())).toEqual([1, -2, 3, 4, 0.5, -6])
    tf.tidy(() => variable.applyGradientDescent(tf.scalar(0.5), tf.tensor2d([2, 2, 2, 2, 2, 2], [2, 3])))
    expect(Array.from(first.dataSync()), 'the earlier read').toEqual([1, -2, 3, 4, 0.5, -6])
    const second = variable.read()
    expect(Array.from(second.dataSync())).toEqual([0, -3, 2, 3, -0.5, -7])
    tf.tidy(() => variable.assign(tf.fill([2, 3], 7)))
    const third = variable.read()
    expect(Array.from(third.dataSync())).toEqual([7, 7, 7, 7, 7, 7])
    const misshaped = tf.zeros([3, 2])
    expect(() => variable.assign(misshaped)).toThrow(/'value' \(value: "float32 \[3, 2\]"\).*must be float32 \[2, 3\]/)
    const alpha = tf.scalar(1)
    expect(() => variable.applyGradientDescent(alpha, misshaped)).toThrow(/'delta' \(value: "float32 \[3, 2\]"\).*must be float32 \[2, 3\]/)
    const vector = tf.ones([1])
    expect(() => variable.applyGradientDescent(vector as tf.Scalar, alpha)).toThrow(/'alpha' \(value: "float32 \[1\]"\).*must be a float32 scalar/)
    const moment = NativeVariable.zeros([6])
    expect(() => variable.applyAdam(moment, moment, { zero: alpha, learningRate: alpha, beta1: alpha, beta2: alpha, epsilon: alpha }, misshaped)).toThrow(
      /'firstMoment' \(value: "\[6\]"\).*must have the variable's shape \[2, 3\]/,
    )
    moment.dispose()
    tf.dispose([misshaped, alpha, vector])
    variable.dispose()
    variable.dispose()
    expect(() => variable.read()).toThrow(/disposed/)
    tf.dispose([first, second, third])
    expect(tf.memory().numTensors).toBe(before)
  })

  it("applyAdam is TensorFlow's Adam: m, v and θ against the formula in float64", () => {
    const before = tf.memory().numTensors
    const theta = [0.5, -1.25, 2, 0.125]
    const gradient = [0.3, -0.7, 1.5, -0.05]
    const [learningRate, beta1, beta2, epsilon] = [0.01, 0.9, 0.99, 1e-6]
    const initial = tf.tensor1d(theta)
    const parameter = new NativeVariable(initial)
    initial.dispose()
    const firstMoment = NativeVariable.zeros([4])
    const secondMoment = NativeVariable.zeros([4])
    let m = [0, 0, 0, 0]
    let v = [0, 0, 0, 0]
    let expected = theta
    for (let step = 0; step < 3; step++) {
      tf.tidy(() => {
        const scalars = {
          zero: tf.scalar(0),
          learningRate: tf.scalar(learningRate),
          beta1: tf.scalar(beta1),
          beta2: tf.scalar(beta2),
          epsilon: tf.scalar(epsilon),
        }
        parameter.applyAdam(firstMoment, secondMoment, scalars, tf.tensor1d(gradient))
      })
      // float32 β as the op gets them: its rates are 1 − float32(β).
      const rate1 = 1 - Math.fround(beta1)
      const rate2 = 1 - Math.fround(beta2)
      m = m.map((value, index) => value + (gradient[index]! - value) * rate1)
      v = v.map((value, index) => value + (gradient[index]! ** 2 - value) * rate2)
      expected = expected.map((value, index) => value - (learningRate * m[index]!) / (Math.sqrt(v[index]!) + epsilon))
    }
    const read = (variable: NativeVariable) => tf.tidy(() => Array.from(variable.read().dataSync()))
    for (const [actual, reference] of [
      [read(parameter), expected],
      [read(firstMoment), m],
      [read(secondMoment), v],
    ] as const) {
      for (const [index, value] of reference.entries()) expect(actual[index]).toBeCloseTo(value, 6)
    }
    for (const variable of [parameter, firstMoment, secondMoment]) variable.dispose()
    expect(tf.memory().numTensors).toBe(before)
  })
})
