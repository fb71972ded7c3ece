import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShapeError } from '@ludic/core'
import { loadConformanceFixture } from '@ludic/conformance-fixtures'
import { expectNoLeaks } from '@ludic/tensors/test'
import {
  exactKlEstimators,
  exactKlLoss,
  isExactKlEstimator,
  klEstimators,
  klLoss,
  klPenalty,
  klTermEstimators,
  type KlEstimator,
  type KlLossMetricTensors,
} from './kl-penalty.js'
import { readLossMetrics } from './loss-metrics.js'
import {
  ErrorTracker,
  expectClose,
  expectGradientMatchesFiniteDifferences,
  flat,
  initBackendUnderTest,
  prefixMask,
  randomTensor,
  tensor2d,
} from './test/fixtures.js'

beforeAll(initBackendUnderTest)

const fixture = loadConformanceFixture<
  { logprob: number[][]; ref_logprob: number[][] },
  { kl_penalty: KlEstimator },
  { kl: number[][]; grad_logprob: number[][] }
>('verl/kl_penalty')
const tracker = new ErrorTracker()
afterAll(() => {
  console.info(tracker.summary('verl/kl_penalty.json'))
})

describe('klPenalty', () => {
  it('matches verl kl_penalty case by case (values and gradient of the sum)', () => {
    const seen = new Set<string>()
    for (const testCase of fixture.cases) {
      const logprobs = tensor2d(testCase.inputs.logprob)
      const reference = tensor2d(testCase.inputs.ref_logprob)
      const estimator = testCase.params.kl_penalty
      seen.add(estimator)
      const kl = klPenalty(logprobs, reference, estimator)
      expectClose(kl.dataSync(), flat(testCase.outputs!.kl), `${testCase.id} kl`, { tracker })
      const gradient = tf.grad((x: tf.Tensor) => tf.sum(klPenalty(x, reference, estimator)))(logprobs)
      expectClose(gradient.dataSync(), flat(testCase.outputs!.grad_logprob), `${testCase.id} grad_logprob`, { tracker })
      tf.dispose([logprobs, reference, kl, gradient])
    }
    expect([...seen].sort()).toEqual([...klEstimators].sort())
  })

  it('k3 is clamped to ±10, abs has gradient 0 at equal log-probs, + is straight-through k2', () => {
    const logprobs = tf.tensor2d([[-30, -1, -2, 0]])
    const reference = tf.tensor2d([[-1, -31, -2, -0.5]])
    expect(Array.from(klPenalty(logprobs, reference, 'k3').dataSync())).toEqual([10, 10, 0, expect.closeTo(Math.exp(-0.5) + 0.5 - 1, 6)])
    const absGradient = tf.grad((x: tf.Tensor) => tf.sum(klPenalty(x, reference, 'abs')))(logprobs)
    expect(Array.from(absGradient.dataSync())).toEqual([-1, 1, 0, 1])
    for (const estimator of ['k1+', 'abs+', 'k3+', 'low_var_kl+'] as const) {
      const gradient = tf.grad((x: tf.Tensor) => tf.sum(klPenalty(x, reference, estimator)))(logprobs)
      const k2Gradient = tf.grad((x: tf.Tensor) => tf.sum(klPenalty(x, reference, 'k2')))(logprobs)
      expectClose(gradient.dataSync(), k2Gradient.dataSync(), estimator)
      tf.dispose([gradient, k2Gradient])
    }
    tf.dispose([logprobs, reference, absGradient])
  })

  it('every estimator: finite differences (the + ones against k2), no leaks, named errors', async () => {
    const logprobs = randomTensor([2, 4], 3, 0.5, -1)
    const reference = randomTensor([2, 4], 4, 0.5, -1)
    for (const estimator of klEstimators) {
      const base = estimator.endsWith('+') ? 'k2' : estimator
      // The + estimators have the value of one estimator and the gradient of k2: check the gradient against k2's values.
      const gradientOf = (x: tf.Tensor): tf.Scalar => tf.sum(klPenalty(x, reference, estimator))
      const valueFunction = (x: tf.Tensor): tf.Scalar => tf.sum(klPenalty(x, reference, base))
      const gradient = tf.grad(gradientOf)(logprobs)
      const expected = tf.grad(valueFunction)(logprobs)
      expectClose(gradient.dataSync(), expected.dataSync(), estimator)
      expectGradientMatchesFiniteDifferences(valueFunction, logprobs, { label: base })
      tf.dispose([gradient, expected])
      await expectNoLeaks(() => klPenalty(logprobs, reference, estimator), { label: `klPenalty ${estimator}` })
      await expectNoLeaks(() => tf.grad(gradientOf)(logprobs), { label: `klPenalty ${estimator} gradient` })
    }
    expect(() => klPenalty(logprobs, reference, 'k4' as KlEstimator)).toThrow(/'estimator'/)
    const wrong = tf.zeros([2, 3])
    expect(() => klPenalty(logprobs, wrong, 'k1')).toThrow(ShapeError)
    const nan = tf.tensor2d([
      [0, Number.NaN, 0, 0],
      [0, 0, 0, 0],
    ])
    expect(() => klPenalty(logprobs, nan, 'k3')).toThrow(/'referenceLogprobs'.*not finite at \[0, 1\]/)
    tf.dispose([logprobs, reference, wrong, nan])
  })
})

describe('klLoss', () => {
  it('aggregates the estimator over the mask (verl use_kl_loss), with gradient and no leaks', async () => {
    const logprobs = randomTensor([3, 4], 5, 0.5, -1)
    const reference = randomTensor([3, 4], 6, 0.5, -1)
    const mask = prefixMask([4, 2, 0], 4)
    const result = klLoss({ logprobs, referenceLogprobs: reference, mask })
    const { loss } = result
    const metrics = await readLossMetrics(result.metrics)
    const lp = logprobs.dataSync()
    const ref = reference.dataSync()
    const m = mask.dataSync()
    let total = 0
    for (let index = 0; index < lp.length; index++) {
      const x = Math.min(Math.max(ref[index]! - lp[index]!, -20), 20)
      total += m[index]! * Math.min(Math.max(Math.exp(x) - x - 1, -10), 10)
    }
    expectClose([metrics.klLoss], [total / 6], 'k3 token-mean')
    expect(metrics.klLoss).toBe(loss.dataSync()[0])
    // The metrics of every call are read (and freed) after the gradient, as a trainer does after the step.
    const pending: KlLossMetricTensors[] = []
    const f = (x: tf.Tensor): tf.Scalar => {
      const term = klLoss({ logprobs: x, referenceLogprobs: reference, mask }, { estimator: 'k2', aggregation: 'seq-mean-token-mean' })
      pending.push(term.metrics)
      return term.loss
    }
    const readPending = async (): Promise<void> => {
      for (const entry of pending.splice(0)) await readLossMetrics(entry)
    }
    expectGradientMatchesFiniteDifferences(f, logprobs, { label: 'klLoss k2' })
    await readPending()
    await expectNoLeaks(
      async () => {
        const gradient = tf.grad(f)(logprobs)
        await readPending()
        return gradient
      },
      { label: 'klLoss gradient' },
    )
    // Value checks are read with the metrics.
    const empty = klLoss({ logprobs, referenceLogprobs: reference, mask: tf.zeros([3, 4]) })
    await expect(readLossMetrics(empty.metrics)).rejects.toThrow(/'inputs.mask'.*no valid token/)
    const nanReference = tf.tensor2d([
      [0, 0, 0, 0],
      [0, Number.NaN, 0, 0],
      [0, 0, 0, 0],
    ])
    const nan = klLoss({ logprobs, referenceLogprobs: nanReference, mask })
    await expect(readLossMetrics(nan.metrics)).rejects.toThrow(/'inputs.referenceLogprobs' \(value: NaN\).*not finite at \[1, 1\], a valid token/)
    tf.dispose([empty.loss, nan.loss, nanReference])
    tf.dispose([logprobs, reference, mask, loss])
  })
})

describe('exactKlLoss', () => {
  it('aggregates the exact values over the mask as klLoss aggregates its estimates, with gradient, no leaks and named errors', async () => {
    const kl = randomTensor([3, 4], 7, 0.5, 0.6)
    const mask = prefixMask([4, 2, 0], 4)
    const result = exactKlLoss({ kl, mask })
    const metrics = await readLossMetrics(result.metrics)
    const values = kl.dataSync()
    const m = mask.dataSync()
    let total = 0
    for (let index = 0; index < values.length; index++) total += m[index]! * values[index]!
    expectClose([metrics.klLoss], [total / 6], 'exact KL token-mean')
    expect(metrics.klLoss).toBe(result.loss.dataSync()[0])
    const seqMean = exactKlLoss({ kl, mask }, { aggregation: 'seq-mean-token-mean' })
    const rowMean = (row: number, length: number) => Array.from(values.slice(row * 4, row * 4 + length)).reduce((a, b) => a + b, 0) / length
    expectClose([(await readLossMetrics(seqMean.metrics)).klLoss], [(rowMean(0, 4) + rowMean(1, 2)) / 2], 'exact KL seq-mean-token-mean')
    const pending: KlLossMetricTensors[] = []
    const f = (x: tf.Tensor): tf.Scalar => {
      const term = exactKlLoss({ kl: x, mask }, { globalTokenCount: 6 })
      pending.push(term.metrics)
      return term.loss
    }
    expectGradientMatchesFiniteDifferences(f, kl, { label: 'exactKlLoss' })
    for (const entry of pending.splice(0)) await readLossMetrics(entry)
    await expectNoLeaks(
      async () => {
        const gradient = tf.grad(f)(kl)
        for (const entry of pending.splice(0)) await readLossMetrics(entry)
        return gradient
      },
      { label: 'exactKlLoss gradient' },
    )
    const nanKl = tf.tensor2d([
      [0, 0, 0, 0],
      [0, Number.NaN, 0, 0],
      [0, 0, 0, 0],
    ])
    const nan = exactKlLoss({ kl: nanKl, mask })
    await expect(readLossMetrics(nan.metrics)).rejects.toThrow(/'inputs.kl' \(value: NaN\).*not finite at \[1, 1\], a valid token/)
    expect(() => exactKlLoss({ kl, mask: tf.ones([3, 5]) })).toThrow(ShapeError)
    expect(() => exactKlLoss({ kl, mask }, { estimator: 'full' } as never)).toThrow(/estimator/)
    tf.dispose([kl, mask, result.loss, seqMean.loss, nan.loss, nanKl])
  })

  it('names: the exact ones beside the estimators, told apart', () => {
    expect(klTermEstimators).toEqual([...klEstimators, ...exactKlEstimators])
    expect(klTermEstimators.filter(isExactKlEstimator)).toEqual(['full', 'full-forward'])
    // klPenalty takes the sampled-token estimators only: the exact ones need the whole distributions.
    expect(() => klPenalty(tf.zeros([1, 1]), tf.zeros([1, 1]), 'full' as never)).toThrow(/estimator/)
  })
})
