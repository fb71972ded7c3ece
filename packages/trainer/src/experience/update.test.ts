import { createRandom } from '@ludic/core'
import * as tf from '@tensorflow/tfjs-core'
import { createAdamW } from '@ludic/model'
import { createPolicyLoss } from '@ludic/objectives'
import { expectNoLeaks } from '@ludic/tensors/test'
import { describe, expect, it } from 'vitest'
import type { TokenSequence } from '../sequences.js'
import { createTestModel, useBackendAndDirectory } from '../test/support.js'
import { accumulateGradients, microBatches, readTerms, updateMiniBatch, type PolicyUpdateRows, type PolicyUpdateSettings } from './update.js'

useBackendAndDirectory('ludic-update-')

/** 64 sequences of random prompts and responses of 1–6 tokens, with old log-probs near the model's and random advantages. */
function miniBatch(seed: number): PolicyUpdateRows {
  const random = createRandom(seed)
  const sequences: TokenSequence[] = Array.from({ length: 64 }, () => ({
    promptIds: Int32Array.from({ length: 1 + random.nextInt(5) }, () => 97 + random.nextInt(20)),
    responseIds: Int32Array.from({ length: 1 + random.nextInt(6) }, () => 97 + random.nextInt(20)),
  }))
  return {
    sequences,
    oldLogprobs: sequences.map((sequence) => Float32Array.from(sequence.responseIds, () => -5.5 + 0.2 * random.nextFloat())),
    advantages: sequences.map((sequence) => Float32Array.from(sequence.responseIds, () => 2 * random.nextFloat() - 1)),
    referenceLogprobs: sequences.map((sequence) => Float32Array.from(sequence.responseIds, () => -5.5 + 0.2 * random.nextFloat())),
  }
}

function settingsFor(aggregation: 'token-mean' | 'seq-mean-token-mean' | 'token-sum', microBatchTokens: number | undefined): PolicyUpdateSettings {
  const model = createTestModel(3)
  const parameters = model.trainableParameters()
  return {
    model,
    parameters,
    optimizer: createAdamW(parameters, { learningRate: 1e-3 }),
    policyLoss: createPolicyLoss('ppo-clip', { aggregation }),
    entropyCoefficient: 0.01,
    entropyExcluded: new Set([98]),
    kl: { coefficient: 0.05, estimator: 'low_var_kl' },
    maxGradNorm: 1e9,
    microBatchTokens,
  }
}

describe('micro-batches', () => {
  it('split a mini-batch within a token budget, in order, a sequence past the budget alone', () => {
    const sequences = [3, 4, 10, 2, 2, 2].map((length) => ({ promptIds: new Int32Array(1), responseIds: new Int32Array(length - 1) }))
    expect(microBatches(sequences, 8)).toEqual([[0, 1], [2], [3, 4, 5]])
    expect(microBatches(sequences, undefined)).toEqual([[0, 1, 2, 3, 4, 5]])
    expect(() => microBatches(sequences, 0)).toThrow(/microBatchTokens/)
  })

  for (const aggregation of ['token-mean', 'seq-mean-token-mean', 'token-sum'] as const) {
    it(`accumulate to the gradient of one pass over the mini-batch, and the same update (${aggregation}, 64 sequences, micro-batches of about 8)`, async () => {
      const rows = miniBatch(7)
      const whole = settingsFor(aggregation, undefined)
      const split = settingsFor(aggregation, 40) // ~8 sequences of ≤ 11 tokens
      const one = accumulateGradients(whole, rows)
      const many = accumulateGradients(split, rows)
      expect(many.terms.length).toBeGreaterThanOrEqual(6)
      const [termsOne, termsMany] = await Promise.all([readTerms(one.terms), readTerms(many.terms)])
      const sum = (terms: typeof termsOne, pick: (term: (typeof termsOne)[number]) => number) => terms.reduce((total, term) => total + pick(term), 0)
      expect(sum(termsMany, (term) => term.loss)).toBeCloseTo(termsOne[0]!.loss, 5)
      let largest = 0
      let worst = 0
      for (const [name, gradient] of one.gradients) {
        const a = gradient.dataSync()
        const b = many.gradients.get(name)!.dataSync()
        for (let index = 0; index < a.length; index++) {
          largest = Math.max(largest, Math.abs(a[index]!))
          worst = Math.max(worst, Math.abs(a[index]! - b[index]!))
        }
      }
      expect(worst / largest).toBeLessThan(1e-6)
      one.dispose()
      many.dispose()
      // The parameters after one optimizer step each.
      await updateMiniBatch(whole, rows, 1e-3)
      const metrics = await updateMiniBatch(split, rows, 1e-3)
      expect(metrics.microBatches).toBe(many.terms.length)
      let delta = 0
      let scale = 0
      for (const [name, variable] of whole.parameters) {
        const a = variable.dataSync()
        const b = split.parameters.get(name)!.dataSync()
        for (let index = 0; index < a.length; index++) {
          scale = Math.max(scale, Math.abs(a[index]!))
          delta = Math.max(delta, Math.abs(a[index]! - b[index]!))
        }
      }
      expect(delta / scale).toBeLessThan(1e-6)
      for (const settings of [whole, split]) {
        settings.optimizer.dispose()
        settings.model.dispose()
      }
    })
  }

  it('free every tensor they make (an update with micro-batches leaves numTensors as it was)', async () => {
    const settings = settingsFor('token-mean', 30)
    const rows = miniBatch(3)
    // The optimizer's moments are made on its first step (the warm-up call).
    await expectNoLeaks(() => updateMiniBatch(settings, rows, 1e-3))
    settings.optimizer.dispose()
    settings.model.dispose()
  })

  it('lower the peak memory of an update, and report the memory a forward holds (forwardTensorBytes)', async () => {
    const random = createRandom(5)
    // 64 sequences of 32 response tokens: the activations grow with the tokens of a pass.
    const sequences: TokenSequence[] = Array.from({ length: 64 }, () => ({
      promptIds: Int32Array.from({ length: 4 }, () => 97 + random.nextInt(20)),
      responseIds: Int32Array.from({ length: 32 }, () => 97 + random.nextInt(20)),
    }))
    const rows: PolicyUpdateRows = {
      sequences,
      oldLogprobs: sequences.map(() => new Float32Array(32).fill(-5.5)),
      advantages: sequences.map(() => Float32Array.from({ length: 32 }, () => 2 * random.nextFloat() - 1)),
    }
    const peaks: Record<string, { profiled: number; reported: number }> = {}
    for (const [name, microBatchTokens] of [
      ['one pass', undefined],
      ['micro-batches of 256 tokens', 256],
    ] as const) {
      const settings = settingsFor('token-mean', microBatchTokens)
      await updateMiniBatch(settings, rows, 1e-3) // the optimizer's moments, made on its first step
      let reported = 0
      const profile = await tf.profile(async () => {
        reported = (await updateMiniBatch(settings, rows, 1e-3)).forwardTensorBytes!
      })
      peaks[name] = { profiled: profile.peakBytes, reported }
      settings.optimizer.dispose()
      settings.model.dispose()
    }
    console.log('update peak tensor bytes (tf.profile, reported):', JSON.stringify(peaks))
    const one = peaks['one pass']!
    const split = peaks['micro-batches of 256 tokens']!
    // The reported figure is a lower bound of the peak (the backward's temporaries come on top of it), and follows it.
    for (const peak of [one, split]) expect(peak.reported).toBeLessThanOrEqual(peak.profiled)
    expect(split.profiled).toBeLessThan(0.5 * one.profiled)
    expect(split.reported).toBeLessThan(0.5 * one.reported)
  })
})
