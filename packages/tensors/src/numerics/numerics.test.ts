import * as tf from '@tensorflow/tfjs-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { loadConformanceFixture } from '@ludic/conformance-fixtures'
import { InvalidArgumentError, ShapeError, createRandom } from '@ludic/core'
import { initTensors } from '../backend/init-tensors.js'
import { expectNoLeaks } from '../memory/no-leaks.js'
import { addAtIds, entropyFromLogits, logSoftmax, logsumexp, maskedMean, maskedSum, maskedVariance, maskedWhiten, tokenLogprobs } from './index.js'

// Naive float64 references, written the textbook way.
function naiveLogsumexp(row: number[]): number {
  const maximum = Math.max(...row)
  if (maximum === -Infinity) return -Infinity
  return maximum + Math.log(row.reduce((total, value) => total + Math.exp(value - maximum), 0))
}
function rows(values: Float32Array | Int32Array | Uint8Array, width: number): number[][] {
  const result: number[][] = []
  for (let start = 0; start < values.length; start += width) result.push(Array.from(values.subarray(start, start + width)))
  return result
}
function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, relative = 1e-5, absolute = 1e-5): void {
  expect(actual.length).toBe(expected.length)
  for (let index = 0; index < expected.length; index++) {
    if (actual[index] === expected[index]) continue
    const difference = Math.abs(actual[index]! - expected[index]!)
    if (!(difference <= absolute + relative * Math.abs(expected[index]!))) {
      throw new Error(`index ${index}: ${actual[index]} vs expected ${expected[index]}`)
    }
  }
}
function randomTensor(shape: number[], seed: number, scale = 3): tf.Tensor {
  const random = createRandom(seed)
  const size = shape.reduce((a, b) => a * b, 1)
  return tf.tensor(
    Float32Array.from({ length: size }, () => random.nextNormal() * scale),
    shape,
  )
}

beforeAll(async () => {
  await initTensors({ backend: 'wasm', verbose: false })
})

describe('logsumexp and logSoftmax', () => {
  it('match the naive reference, including huge and -Infinity logits', () => {
    const data = new Float32Array([1, 2, 3, 4, 1000, 1001, 1002, -5, -Infinity, -Infinity, -Infinity, -Infinity, -1e4, 0, 88, -Infinity])
    const x = tf.tensor2d(data, [4, 4])
    const expected = rows(data, 4).map(naiveLogsumexp)
    const result = logsumexp(x)
    expectClose(result.dataSync(), expected)
    const softmax = logSoftmax(x)
    const softmaxValues = softmax.dataSync()
    rows(data, 4).forEach((row, rowIndex) => {
      row.forEach((value, column) => {
        const expectedValue = value - expected[rowIndex]!
        const actual = softmaxValues[rowIndex * 4 + column]!
        if (Number.isNaN(expectedValue)) expect(Number.isNaN(actual)).toBe(true)
        else if (!Number.isFinite(expectedValue)) expect(actual).toBe(expectedValue)
        else expect(Math.abs(actual - expectedValue)).toBeLessThan(1e-4)
      })
    })
    expect(logsumexp(x, 0, true).shape).toEqual([1, 4])
    tf.dispose([x, result, softmax])
  })

  it('gradient of logsumexp is the softmax', () => {
    const x = randomTensor([3, 7], 1)
    const gradient = tf.grad((input: tf.Tensor) => tf.sum(logsumexp(input)))(x)
    const softmax = tf.softmax(x)
    expectClose(gradient.dataSync(), softmax.dataSync(), 1e-5, 1e-6)
    tf.dispose([x, gradient, softmax])
  })

  it('names bad arguments', () => {
    expect(() => logSoftmax([1, 2] as unknown as tf.Tensor)).toThrow(/'logits'.*logSoftmax.*tf.Tensor/)
    const x = tf.tensor1d([1, 2])
    expect(() => logsumexp(x, 3)).toThrow(InvalidArgumentError)
    const ints = tf.tensor1d([1, 2], 'int32')
    expect(() => logSoftmax(ints)).toThrow(/float32/)
    tf.dispose([x, ints])
  })
})

describe('tokenLogprobs', () => {
  /** Runs `body` with the backend's TensorScatterUpdate kernel unregistered (tokenLogprobs' one-hot path), then registers it again. */
  const withoutScatter = (body: () => void) => {
    const config = tf.getKernel('TensorScatterUpdate', tf.getBackend())!
    tf.unregisterKernel('TensorScatterUpdate', tf.getBackend())
    try {
      body()
    } finally {
      tf.registerKernel(config)
    }
  }

  for (const path of ['scatter', 'one-hot'] as const)
    it(`matches logSoftmax gathered at the ids, forward and gradient (${path} backward)`, () => (path === 'scatter' ? check() : withoutScatter(check)))
  function check(): void {
    const [batch, time, vocabulary] = [2, 5, 11]
    const logits = randomTensor([batch, time, vocabulary], 2, 4)
    const random = createRandom(3)
    const ids = Int32Array.from({ length: batch * time }, () => random.nextInt(vocabulary))
    const tokenIds = tf.tensor2d(ids, [batch, time], 'int32')
    const result = tokenLogprobs(logits, tokenIds)
    expect(result.shape).toEqual([batch, time])
    const logitRows = rows(logits.dataSync() as Float32Array, vocabulary)
    const expected = logitRows.map((row, index) => row[ids[index]!]! - naiveLogsumexp(row))
    expectClose(result.dataSync(), expected)
    // Gradient of sum(w * logprob): w * (oneHot - softmax), against the naive formula.
    const weights = randomTensor([batch, time], 4, 1)
    const gradient = tf.grad((input: tf.Tensor) => tf.sum(tf.mul(tokenLogprobs(input, tokenIds), weights)))(logits)
    const weightValues = weights.dataSync()
    const expectedGradient = logitRows.flatMap((row, index) => {
      const normaliser = naiveLogsumexp(row)
      return row.map((value, column) => weightValues[index]! * ((column === ids[index] ? 1 : 0) - Math.exp(value - normaliser)))
    })
    expectClose(gradient.dataSync(), expectedGradient, 1e-4, 1e-6)
    tf.dispose([logits, tokenIds, result, weights, gradient])
  }

  it('addAtIds adds one value a row at its id, with the scatter kernel and without (one-hot), leaving the input as it was', () => {
    const matrix = tf.tensor2d([1, 2, 3, 4, 5, 6, 7, 8], [2, 4])
    const ids = tf.tensor1d([3, 0], 'int32')
    const values = tf.tensor1d([0.5, -2])
    const expected = [1, 2, 3, 4.5, 3, 6, 7, 8]
    const before = tf.memory().numTensors
    const scattered = addAtIds(matrix, ids, values)
    expect(Array.from(scattered.dataSync())).toEqual(expected)
    withoutScatter(() => {
      const plain = addAtIds(matrix, ids, values)
      expect(Array.from(plain.dataSync())).toEqual(expected)
      plain.dispose()
    })
    scattered.dispose()
    expect(tf.memory().numTensors).toBe(before)
    expect(Array.from(matrix.dataSync())).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    tf.dispose([matrix, ids, values])
  })

  it('the two backward passes agree to float32 rounding, and masked (-Infinity) logits get a zero gradient', () => {
    const logits = tf.tidy(() =>
      tf.where(tf.less(randomTensor([3, 4, 9], 8, 3), -2), tf.fill([3, 4, 9], Number.NEGATIVE_INFINITY), randomTensor([3, 4, 9], 8, 3)),
    )
    const ids = tf.argMax(logits, -1)
    const weights = randomTensor([3, 4], 9, 1)
    const run = () => tf.valueAndGrad((input: tf.Tensor) => tf.sum(tf.mul(tokenLogprobs(input, ids), weights)))(logits)
    const scattered = run()
    let plain: ReturnType<typeof run> | undefined
    withoutScatter(() => {
      plain = run()
    })
    expect(scattered.value.dataSync()).toEqual(plain!.value.dataSync())
    expectClose(scattered.grad.dataSync(), Array.from(plain!.grad.dataSync()), 1e-6, 1e-7)
    const masked = Array.from(logits.dataSync()).map((value) => value === Number.NEGATIVE_INFINITY)
    expect(masked.some(Boolean)).toBe(true)
    scattered.grad.dataSync().forEach((value, index) => (masked[index] ? expect(Math.abs(value)).toBe(0) : expect(Number.isFinite(value)).toBe(true)))
    tf.dispose([logits, ids, weights, scattered.value, scattered.grad, plain!.value, plain!.grad])
  })

  it('keeps the ids alive for the backward pass even when the caller disposed them', () => {
    const logits = randomTensor([2, 3], 6)
    const gradient = tf.grad((input: tf.Tensor) => {
      const ids = tf.tensor1d([0, 2], 'int32')
      const result = tf.sum(tokenLogprobs(input, ids))
      ids.dispose()
      return result
    })(logits)
    expect(gradient.shape).toEqual([2, 3])
    expect(Array.from(gradient.dataSync()).every(Number.isFinite)).toBe(true)
    tf.dispose([logits, gradient])
  })

  it('rejects ids out of range and mismatched shapes, and does not leak', async () => {
    const logits = randomTensor([2, 3, 4], 5)
    const bad = tf.tensor2d([0, 1, 2, 3, 4, 0], [2, 3], 'int32')
    expect(() => tokenLogprobs(logits, bad)).toThrow(/flat index 4.*value: 4.*\[0, 4\)/)
    const wrongShape = tf.tensor2d([0, 1, 2, 3], [2, 2], 'int32')
    expect(() => tokenLogprobs(logits, wrongShape)).toThrow(ShapeError)
    const floats = tf.tensor2d([0, 1, 2, 3, 0, 1], [2, 3])
    expect(() => tokenLogprobs(logits, floats)).toThrow(/int32/)
    const ids = tf.tensor2d([0, 1, 2, 3, 0, 1], [2, 3], 'int32')
    await expectNoLeaks(() => tf.grad((input: tf.Tensor) => tf.sum(tokenLogprobs(input, ids)))(logits), { label: 'tokenLogprobs gradient' })
    tf.dispose([logits, bad, wrongShape, floats, ids])
  })
})

describe('entropyFromLogits', () => {
  it('matches the naive entropy and ignores -Infinity logits', () => {
    const data = new Float32Array([0, 0, 0, 0, 10, -10, 0, 3, 1, 2, -Infinity, -Infinity])
    const logits = tf.tensor2d(data, [3, 4])
    const expected = rows(data, 4).map((row) => {
      const normaliser = naiveLogsumexp(row)
      return -row.reduce((total, value) => {
        const probability = Math.exp(value - normaliser)
        return probability === 0 ? total : total + probability * (value - normaliser)
      }, 0)
    })
    const entropy = entropyFromLogits(logits)
    expectClose(entropy.dataSync(), expected)
    expect(entropy.dataSync()[0]).toBeCloseTo(Math.log(4), 5)
    // Gradient with a masked token: finite, and 0 at the masked token.
    const masked = tf.tensor2d([[1, 2, -Infinity]])
    const maskedGradient = tf
      .grad((input: tf.Tensor) => tf.sum(entropyFromLogits(input)))(masked)
      .dataSync()
    expect(maskedGradient[2]).toBe(0)
    expect(Number.isFinite(maskedGradient[0]!) && maskedGradient[0]! !== 0).toBe(true)
    tf.dispose(masked)
    const broken = tf.tensor2d([
      [0, Number.NaN],
      [0, Infinity],
    ])
    const brokenEntropy = entropyFromLogits(broken).dataSync()
    expect(Number.isNaN(brokenEntropy[0])).toBe(true)
    expect(Number.isNaN(brokenEntropy[1])).toBe(true)
    tf.dispose([logits, entropy, broken])
  })

  it('matches verl (compute_entropy_loss, token-mean): token entropies and gradient', () => {
    const { cases } = loadConformanceFixture<
      { logits: number[][][]; response_mask: number[][] },
      { loss_agg_mode: string },
      { token_entropy: number[][]; grad_logits: number[][][]; entropy_loss: number }
    >('verl/compute_entropy_loss')
    let checked = 0
    for (const testCase of cases) {
      if (testCase.outputs === undefined) continue
      const logits = tf.tensor3d(testCase.inputs.logits)
      const mask = tf.tensor2d(testCase.inputs.response_mask)
      const entropy = entropyFromLogits(logits)
      expectClose(entropy.dataSync(), testCase.outputs.token_entropy.flat(), 1e-5, 1e-5)
      if (testCase.params.loss_agg_mode === 'token-mean') {
        const gradient = tf.grad((input: tf.Tensor) => maskedMean(entropyFromLogits(input), mask))(logits)
        expectClose(gradient.dataSync(), testCase.outputs.grad_logits.flat(2), 1e-4, 1e-6)
        const loss = maskedMean(entropy, mask)
        expectClose(loss.dataSync(), [testCase.outputs.entropy_loss], 1e-5, 1e-6)
        tf.dispose([gradient, loss])
        checked++
      }
      tf.dispose([logits, mask, entropy])
    }
    expect(checked).toBeGreaterThan(0)
  })
})

describe('masked reductions', () => {
  let values: tf.Tensor
  let mask: tf.Tensor
  beforeAll(() => {
    values = tf.tensor2d([
      [1, 2, 3, Number.NaN],
      [4, 5, Infinity, 7],
    ])
    mask = tf.tensor2d([
      [1, 1, 1, 0],
      [1, 1, 0, 0],
    ])
  })

  it('sum and mean ignore masked values, even NaN and Infinity', () => {
    expect(maskedSum(values, mask).dataSync()[0]).toBe(15)
    expectClose(maskedSum(values, mask, 1).dataSync(), [6, 9])
    expectClose(maskedMean(values, mask).dataSync(), [15 / (5 + 1e-8)])
    expectClose(maskedMean(values, mask, -1).dataSync(), [2, 4.5])
  })

  it('variance is unbiased and whitening follows verl', () => {
    const valid = [1, 2, 3, 4, 5]
    const mean = 3
    const unbiased = valid.reduce((total, value) => total + (value - mean) ** 2, 0) / 4
    expectClose(maskedVariance(values, mask).dataSync(), [unbiased])
    expectClose(maskedVariance(values, mask, false).dataSync(), [(unbiased * 4) / 5])
    const whitened = maskedWhiten(values, mask).dataSync()
    const expected = [1, 2, 3, 4, 5].map((value) => (value - mean) / Math.sqrt(unbiased + 1e-8))
    expectClose([whitened[0]!, whitened[1]!, whitened[2]!, whitened[4]!, whitened[5]!], expected)
    const shifted = maskedWhiten(values, mask, { shiftMean: false }).dataSync()
    expect(shifted[0]).toBeCloseTo(expected[0]! + mean, 5)
  })

  it('whitening needs two valid elements; masks must be 0/1 and match the shape', () => {
    const single = tf.tensor2d([
      [1, 0, 0, 0],
      [0, 0, 0, 0],
    ])
    expect(() => maskedWhiten(values, single)).toThrow(/at least 2/)
    const fractional = tf.tensor2d([
      [0.5, 1, 1, 1],
      [1, 1, 1, 1],
    ])
    expect(() => maskedWhiten(values, fractional)).toThrow(/only 0 and 1/)
    const wrong = tf.tensor2d([[1, 1]])
    expect(() => maskedMean(values, wrong)).toThrow(ShapeError)
    tf.dispose([single, fractional, wrong])
  })

  it('do not leak', async () => {
    await expectNoLeaks(() => [maskedSum(values, mask), maskedMean(values, mask, 1), maskedWhiten(values, mask), entropyFromLogits(values)])
  })
})
