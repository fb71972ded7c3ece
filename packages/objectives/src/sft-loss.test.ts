import * as tf from '@tensorflow/tfjs-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { expectNoLeaks } from '@ludic/tensors/test'
import { sftLoss } from './sft-loss.js'
import { expectClose, expectGradientMatchesFiniteDifferences, initBackendUnderTest, prefixMask, randomTensor } from './test/fixtures.js'

beforeAll(initBackendUnderTest)

describe('sftLoss', () => {
  it('is the masked mean negative log-likelihood of the targets (ignoring −100 at masked positions)', () => {
    const logits = randomTensor([2, 3, 4], 1, 2)
    const targetIds = tf.tensor2d(
      [
        [1, 3, 0],
        [2, -100, -100],
      ],
      [2, 3],
      'int32',
    )
    const mask = prefixMask([3, 1], 3)
    const { loss, metrics } = sftLoss(logits, targetIds, mask)
    const rows = logits.arraySync() as number[][][]
    const nll = (row: number, column: number, id: number): number => {
      const values = rows[row]![column]!
      const maximum = Math.max(...values)
      return maximum + Math.log(values.reduce((total, value) => total + Math.exp(value - maximum), 0)) - values[id]!
    }
    const expected = (nll(0, 0, 1) + nll(0, 1, 3) + nll(0, 2, 0) + nll(1, 0, 2)) / 4
    expectClose(loss.dataSync(), [expected], 'token-mean nll')
    expect(metrics.tokens).toBe(4)
    expect(metrics.perplexity).toBeCloseTo(Math.exp(expected), 4)
    const sequenceMean = sftLoss(logits, targetIds, mask, { aggregation: 'seq-mean-token-mean' })
    expectClose(sequenceMean.loss.dataSync(), [((nll(0, 0, 1) + nll(0, 1, 3) + nll(0, 2, 0)) / 3 + nll(1, 0, 2)) / 2], 'seq-mean-token-mean nll')
    tf.dispose([logits, targetIds, mask, loss, sequenceMean.loss])
  })

  it('allows −Infinity logits (a masked vocabulary) except at the target', () => {
    const logits = tf.tensor3d([[[0, Number.NEGATIVE_INFINITY, 0, Number.NEGATIVE_INFINITY]]])
    const mask = tf.tensor2d([[1]])
    const { loss } = sftLoss(logits, tf.tensor2d([[2]], [1, 1], 'int32'), mask)
    expect(loss.dataSync()[0]).toBeCloseTo(Math.log(2), 6)
    const gradient = tf.grad((x: tf.Tensor) => sftLoss(x, tf.tensor2d([[2]], [1, 1], 'int32'), mask).loss)(logits)
    expectClose(gradient.dataSync(), [0.5, 0, -0.5, 0], 'gradient')
    expect(() => sftLoss(logits, tf.tensor2d([[1]], [1, 1], 'int32'), mask)).toThrow(/'logits'.*not finite at \[0, 0\]/)
    tf.dispose([logits, mask, loss, gradient])
  })

  it('has the finite-difference gradient, does not leak, names bad arguments', async () => {
    const logits = randomTensor([2, 3, 5], 2)
    const targetIds = tf.tensor2d(
      [
        [1, 4, 0],
        [2, 3, 3],
      ],
      [2, 3],
      'int32',
    )
    const mask = prefixMask([3, 2], 3)
    const f = (x: tf.Tensor): tf.Scalar => sftLoss(x, targetIds, mask).loss
    expectGradientMatchesFiniteDifferences(f, logits, { label: 'sftLoss' })
    await expectNoLeaks(() => sftLoss(logits, targetIds, mask).loss, { label: 'sftLoss' })
    await expectNoLeaks(() => tf.grad(f)(logits), { label: 'sftLoss gradient' })
    expect(() =>
      sftLoss(
        logits,
        tf.tensor2d(
          [
            [1, 9, 0],
            [2, 3, 3],
          ],
          [2, 3],
          'int32',
        ),
        mask,
      ),
    ).toThrow(/'targetIds'.*\[0, 5\) at \[0, 1\]/)
    expect(() => sftLoss(logits, tf.zeros([2, 3]), mask)).toThrow(/'targetIds'.*int32/)
    expect(() => sftLoss(logits, targetIds, tf.zeros([2, 3]))).toThrow(/'mask'.*no valid token/)
    expect(() => sftLoss(logits, targetIds, mask, { aggregation: 'mean' as never })).toThrow(/options.aggregation/)
    tf.dispose([logits, targetIds, mask])
  })
})
