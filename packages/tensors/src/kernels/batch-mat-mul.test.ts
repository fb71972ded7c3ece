import { describe, expect, it } from 'vitest'
import * as tf from '@tensorflow/tfjs-core'
import '../backend/register-gradients.js'
import { ShapeError } from '@ludic/core'
import { resolveProductShape } from './batch-mat-mul.js'
import { compareWithCpu, expectAllClose, sampleValues } from './backend-comparison.js'
import { backendUnderTest } from './backend-under-test.js'

const transposes = [
  [false, false],
  [false, true],
  [true, false],
  [true, true],
] as const

/** Operand shapes for a product [..., rows, depth] · [..., depth, columns], transposed as asked. */
function operandShapes(
  aOuter: number[],
  bOuter: number[],
  rows: number,
  depth: number,
  columns: number,
  transposeA: boolean,
  transposeB: boolean,
): [number[], number[]] {
  return [
    [...aOuter, ...(transposeA ? [depth, rows] : [rows, depth])],
    [...bOuter, ...(transposeB ? [columns, depth] : [depth, columns])],
  ]
}

function tensorOf(shape: number[], seed: number): tf.Tensor {
  return tf.tensor(sampleValues(tf.util.sizeFromShape(shape), seed), shape, 'float32')
}

describe(`BatchMatMul on ${backendUnderTest()} equals the CPU backend`, () => {
  // [aOuter, bOuter, rows, depth, columns]: 1×1, odd sizes off the 4×8 register tile, batches;
  // depth past one cache block (600: five depth blocks) and two column blocks, as one product (taken
  // to XNNPACK's thread pool by the multithreaded build) and as two batches (always the SIMD gemm);
  // a wide product (1024 columns, depth 256: the stock XNNPACK path).
  const forwardCases: [number[], number[], number, number, number][] = [
    [[], [], 1, 1, 1],
    [[], [], 3, 5, 7],
    [[], [], 9, 33, 17],
    [[], [], 8, 16, 8],
    [[4], [4], 6, 7, 5],
    [[2, 3], [2, 3], 5, 4, 9],
    [[], [], 70, 600, 300],
    [[2], [2], 70, 600, 300],
    [[], [], 5, 256, 1024],
    // Broadcast batches: B shared, A shared, and a two-axis broadcast the stock kernel got wrong.
    [[2, 3], [], 5, 4, 6],
    [[], [3], 5, 4, 6],
    [[2, 1], [1, 3], 5, 4, 6],
    [[3], [1], 2, 3, 4],
  ]
  for (const [aOuter, bOuter, rows, depth, columns] of forwardCases) {
    for (const [transposeA, transposeB] of transposes) {
      const [aShape, bShape] = operandShapes(aOuter, bOuter, rows, depth, columns, transposeA, transposeB)
      it(`forward [${aShape}]${transposeA ? 'ᵀ' : ''} · [${bShape}]${transposeB ? 'ᵀ' : ''}`, async () => {
        const outer = tf.broadcast_util.assertAndGetBroadcastShape(aOuter, bOuter)
        const results = await compareWithCpu(
          () => ({ product: tf.matMul(tensorOf(aShape, 1), tensorOf(bShape, 2), transposeA, transposeB) }),
          // The CPU backend mishandles batches broadcast over two axes: broadcast explicitly there.
          () => ({
            product: tf.matMul(
              tf.broadcastTo(tensorOf(aShape, 1), [...outer, ...aShape.slice(-2)]),
              tf.broadcastTo(tensorOf(bShape, 2), [...outer, ...bShape.slice(-2)]),
              transposeA,
              transposeB,
            ),
          }),
        )
        expectAllClose(results, 'matMul')
      })
    }
  }

  // Gradients need equal batch shapes (tfjs-core's matMul gradient does not reduce broadcast axes).
  const gradientCases: [number[], number, number, number][] = [
    [[], 1, 1, 1],
    [[], 3, 5, 7],
    [[], 12, 9, 10],
    [[3], 6, 4, 5],
    [[2, 2], 8, 16, 8],
  ]
  for (const [outer, rows, depth, columns] of gradientCases) {
    for (const [transposeA, transposeB] of transposes) {
      const [aShape, bShape] = operandShapes(outer, outer, rows, depth, columns, transposeA, transposeB)
      it(`gradient [${aShape}]${transposeA ? 'ᵀ' : ''} · [${bShape}]${transposeB ? 'ᵀ' : ''}`, async () => {
        const results = await compareWithCpu(() => {
          const a = tensorOf(aShape, 3)
          const b = tensorOf(bShape, 4)
          const upstream = tensorOf([...outer, rows, columns], 5)
          const [gradientA, gradientB] = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.matMul(x, y, transposeA, transposeB))([a, b], upstream)
          return { gradientA: gradientA!, gradientB: gradientB! }
        })
        expectAllClose(results, 'matMul gradient')
      })
    }
  }

  it('an empty depth gives zeros', async () => {
    const results = await compareWithCpu(() => ({ product: tf.matMul(tf.zeros([3, 0]), tf.zeros([0, 4])) }))
    expect(Array.from(results.actual.product)).toEqual(new Array(12).fill(0))
  })
})

describe('resolveProductShape', () => {
  it('maps each output batch to the batches of A and B it reads', () => {
    const shape = resolveProductShape([2, 1, 5, 4], [1, 3, 4, 6], false, false)
    expect(shape.outerShape).toEqual([2, 3])
    expect(Array.from(shape.aBatchOf)).toEqual([0, 0, 0, 1, 1, 1])
    expect(Array.from(shape.bBatchOf)).toEqual([0, 1, 2, 0, 1, 2])
    expect([shape.rows, shape.depth, shape.columns]).toEqual([5, 4, 6])
  })
  it('reads transposed dimensions', () => {
    const shape = resolveProductShape([7, 3], [5, 7], true, true)
    expect([shape.rows, shape.depth, shape.columns]).toEqual([3, 7, 5])
  })
  it('rejects mismatched inner dimensions with a ShapeError', () => {
    expect(() => resolveProductShape([2, 3], [4, 5], false, false)).toThrow(ShapeError)
  })
})
