import { describe, it } from 'vitest'
import * as tf from '@tensorflow/tfjs-core'
import '../backend/register-gradients.js'
import { compareWithCpu, expectAllClose, sampleValues } from './backend-comparison.js'
import { backendUnderTest } from './backend-under-test.js'

const values = (shape: number[], seed: number): tf.Tensor => tf.tensor(sampleValues(tf.util.sizeFromShape(shape), seed), shape)

describe(`tf.fused.matMul on ${backendUnderTest()} equals the CPU backend`, () => {
  const activations = ['linear', 'relu', 'relu6', 'elu', 'sigmoid', 'leakyrelu', 'prelu'] as const
  // [a, b, transposeA, transposeB]: plain, transposed (the stock wasm kernel's wrong bias), batched, 1×1.
  const products: [number[], number[], boolean, boolean][] = [
    [[3, 4], [4, 5], false, false],
    [[3, 4], [5, 4], false, true],
    [[4, 3], [4, 5], true, false],
    [[2, 3, 4], [2, 4, 5], false, false],
    [[1, 1], [1, 1], false, false],
  ]
  for (const [aShape, bShape, transposeA, transposeB] of products) {
    const columns = transposeB ? bShape.at(-2)! : bShape.at(-1)!
    for (const activation of activations) {
      it(`[${aShape}]${transposeA ? 'ᵀ' : ''} · [${bShape}]${transposeB ? 'ᵀ' : ''} + bias, ${activation}`, async () => {
        const results = await compareWithCpu(() => {
          const options = {
            transposeA,
            transposeB,
            activation,
            leakyreluAlpha: 0.3,
            ...(activation === 'prelu' ? { preluActivationWeights: values([columns], 7) } : {}),
          }
          const product = (a: tf.Tensor, b: tf.Tensor, bias: tf.Tensor): tf.Tensor => tf.fused.matMul({ a, b, bias, ...options })
          const [gradientA, gradientB, gradientBias] = tf.grads(product)([values(aShape, 1), values(bShape, 2), values([columns], 3)])
          return {
            forward: product(values(aShape, 1), values(bShape, 2), values([columns], 3)),
            withoutBias: tf.fused.matMul({ a: values(aShape, 1), b: values(bShape, 2), ...options }),
            scalarBias: tf.fused.matMul({ a: values(aShape, 1), b: values(bShape, 2), bias: tf.scalar(0.25), ...options }),
            gradientA: gradientA!,
            gradientB: gradientB!,
            gradientBias: gradientBias!,
          }
        })
        expectAllClose(results, 'fused matMul')
      })
    }
  }
})
