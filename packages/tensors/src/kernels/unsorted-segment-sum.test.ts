import { describe, expect, it } from 'vitest'
import * as tf from '@tensorflow/tfjs-core'
import '../backend/register-gradients.js'
import { InvalidArgumentError, ShapeError } from '@ludic/core'
import { activateBackend } from '../backend/init-tensors.js'
import { compareWithCpu, expectAllClose, sampleValues } from './backend-comparison.js'
import { backendUnderTest } from './backend-under-test.js'

const values = (shape: number[], seed: number): tf.Tensor => tf.tensor(sampleValues(tf.util.sizeFromShape(shape), seed), shape)

describe(`UnsortedSegmentSum on ${backendUnderTest()} equals the CPU backend`, () => {
  const cases: { name: string; shape: number[]; ids: number[][] | number[]; segments: number }[] = [
    { name: 'rows into segments, one left empty', shape: [6, 3], ids: [0, 2, 0, 1, 2, 2], segments: 4 },
    { name: 'scalars', shape: [5], ids: [1, 1, 0, 1, 0], segments: 2 },
    {
      name: 'a rank-2 prefix of ids',
      shape: [2, 3, 4],
      ids: [
        [0, 1, 0],
        [2, 2, 1],
      ],
      segments: 3,
    },
    { name: 'negative ids are dropped', shape: [4, 2], ids: [0, -1, 1, -3], segments: 2 },
    { name: '1 × 1', shape: [1, 1], ids: [0], segments: 1 },
  ]
  for (const { name, shape, ids, segments } of cases) {
    it(name, async () => {
      const compute = (flatten: boolean) => () => {
        // The CPU backend handles rank-1 ids only: its reference flattens the id prefix.
        const segmentIds = tf.tensor(ids, undefined, 'int32')
        const idCount = segmentIds.size
        const prepare = (x: tf.Tensor): tf.Tensor => (flatten ? tf.reshape(x, [idCount, ...shape.slice(segmentIds.rank)]) : x)
        const flatIds = (flatten ? tf.reshape(segmentIds, [idCount]) : segmentIds) as tf.Tensor1D
        return {
          float: tf.unsortedSegmentSum(prepare(values(shape, 1)), flatIds, segments),
          integer: tf.cast(tf.unsortedSegmentSum(prepare(tf.cast(tf.mul(values(shape, 2), 10), 'int32')), flatIds, segments), 'float32'),
        }
      }
      const results = await compareWithCpu(compute(false), compute(true))
      expectAllClose(results, name)
    })
  }

  it('is the gradient of an embedding lookup (tf.gather), repeated ids included', async () => {
    const results = await compareWithCpu(() => {
      const tokens = tf.tensor2d(
        [
          [3, 1, 3],
          [0, 3, 2],
        ],
        [2, 3],
        'int32',
      )
      const [embeddingGradient] = tf.grads((embedding: tf.Tensor) => tf.gather(embedding, tokens))([values([5, 4], 1)], values([2, 3, 4], 2))
      return { embeddingGradient: embeddingGradient! }
    })
    expectAllClose(results, 'gather gradient')
  })

  it('has a gradient itself (a gather)', async () => {
    const results = await compareWithCpu(() => {
      const segmentIds = tf.tensor1d([1, 0, 1], 'int32')
      const [gradient] = tf.grads((x: tf.Tensor) => tf.unsortedSegmentSum(x, segmentIds, 3))([values([3, 2], 1)], values([3, 2], 2))
      return { gradient: gradient! }
    })
    expectAllClose(results, 'unsortedSegmentSum gradient')
  })
})

describe('UnsortedSegmentSum on wasm validates its arguments', () => {
  const run = (inputs: { x: tf.Tensor; segmentIds: tf.Tensor }, numSegments: number): unknown =>
    tf.tidy(() => tf.engine().runKernel(tf.UnsortedSegmentSum, inputs, { numSegments }))

  it('rejects an id of numSegments or more, leaking nothing', async () => {
    await activateBackend('wasm')
    const x = tf.ones([3, 2])
    const segmentIds = tf.tensor1d([0, 2, 1], 'int32')
    const before = tf.memory().numTensors
    expect(() => run({ x, segmentIds }, 2)).toThrow(InvalidArgumentError)
    expect(() => run({ x, segmentIds }, 2)).toThrow(/out of range \[0, 2\)/)
    expect(tf.memory().numTensors).toBe(before)
    tf.dispose([x, segmentIds])
  })

  it('rejects float ids, a negative or fractional numSegments, and ids that are not a prefix of x', async () => {
    await activateBackend('wasm')
    const x = tf.ones([3, 2])
    expect(() => run({ x, segmentIds: tf.tensor1d([0, 1, 0]) }, 2)).toThrow(InvalidArgumentError)
    expect(() => run({ x, segmentIds: tf.tensor1d([0, 1, 0], 'int32') }, -1)).toThrow(InvalidArgumentError)
    expect(() => run({ x, segmentIds: tf.tensor1d([0, 1, 0], 'int32') }, 1.5)).toThrow(InvalidArgumentError)
    expect(() => run({ x, segmentIds: tf.tensor1d([0, 1], 'int32') }, 2)).toThrow(ShapeError)
    x.dispose()
  })
})
