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

/** The largest gradient entry of `expected`, and the largest difference of `actual` from it. */
function gradientDifference(expected: Map<string, tf.Tensor>, actual: Map<string, tf.Tensor>): { largest: number; worst: number } {
  let largest = 0
  let worst = 0
  for (const [name, gradient] of expected) {
    const a = gradient.dataSync()
    const b = actual.get(name)!.dataSync()
    for (let index = 0; index < a.length; index++) {
      largest = Math.max(largest, Math.abs(a[index]!))
      worst = Math.max(worst, Math.abs(a[index]! - b[index]!))
    }
  }
  return { largest, worst }
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
      const { largest, worst } = gradientDifference(one.gradients, many.gradients)
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

describe('an exact KL term (full, full-forward): the reference runs beside the policy on each micro-batch', () => {
  /** Σ over the batch's response tokens of the exact KL at each, from the two models' whole logits (a plain loop), over the token count. */
  function plainTokenMeanKl(settings: PolicyUpdateSettings, rows: PolicyUpdateRows, direction: 'reverse' | 'forward'): number {
    let total = 0
    let count = 0
    for (const { promptIds, responseIds } of rows.sequences) {
      const sequence = [...promptIds, ...responseIds]
      const [policy, reference] = tf.tidy(() =>
        [settings.model, settings.kl!.reference!].map((model) => (tf.logSoftmax(model.forward([sequence])).arraySync() as number[][][])[0]!),
      )
      responseIds.forEach((_, step) => {
        const at = promptIds.length - 1 + step
        let kl = 0
        policy![at]!.forEach((lp, v) => {
          const lq = reference![at]![v]!
          kl += direction === 'reverse' ? Math.exp(lp) * (lp - lq) : Math.exp(lq) * (lq - lp)
        })
        total += kl
        count++
      })
    }
    return total / count
  }

  for (const [estimator, direction] of [
    ['full', 'reverse'],
    ['full-forward', 'forward'],
  ] as const) {
    it(`${estimator}: the term is the batch's exact KL, micro-batches sum to one pass, and the step frees what it makes`, async () => {
      const rows = { ...miniBatch(11), referenceLogprobs: undefined } // the exact term needs no sampled-token log-probs
      // A sharper reference than the near-uniform test model: far enough that KL(p ‖ q) and KL(q ‖ p) differ.
      const reference = createTestModel(8)
      for (const [name, weight] of reference.parameters()) if (/embed|lm_head/.test(name)) weight.assign(tf.mul(weight, 8))
      const make = (microBatchTokens: number | undefined): PolicyUpdateSettings => ({
        ...settingsFor('token-mean', microBatchTokens),
        entropyCoefficient: 0,
        kl: { coefficient: 1, estimator, reference },
      })
      const whole = make(undefined)
      const split = make(40)
      // A policy loss of 0 (every advantage 0; PPO's clipped term is then 0 whatever the ratio): the loss is the KL term alone.
      const policyRows: PolicyUpdateRows = { ...rows, advantages: rows.advantages.map((row) => new Float32Array(row.length)) }
      const one = accumulateGradients(whole, policyRows)
      const many = accumulateGradients(split, policyRows)
      const [termsOne, termsMany] = await Promise.all([readTerms(one.terms), readTerms(many.terms)])
      const expected = plainTokenMeanKl(whole, rows, direction)
      const otherDirection = plainTokenMeanKl(whole, rows, direction === 'reverse' ? 'forward' : 'reverse')
      expect(expected).toBeGreaterThan(1e-2) // two different models: a KL the check can tell from 0
      expect(Math.abs(expected - otherDirection)).toBeGreaterThan(0.1 * expected) // and one direction from the other
      expect(termsOne[0]!.kl!.klLoss).toBeCloseTo(expected, 5)
      expect(termsMany.reduce((total, term) => total + term.kl!.klLoss, 0)).toBeCloseTo(expected, 5)
      const { largest, worst } = gradientDifference(one.gradients, many.gradients)
      expect(largest).toBeGreaterThan(0)
      expect(worst / largest).toBeLessThan(1e-5)
      one.dispose()
      many.dispose()
      await updateMiniBatch(whole, rows, 1e-3) // the optimizer's moments are made on its first step
      await expectNoLeaks(() => updateMiniBatch(whole, rows, 1e-3))
      for (const settings of [whole, split]) {
        settings.optimizer.dispose()
        settings.model.dispose()
      }
      reference.dispose()
    })
  }

  it('full-forward pulls back a move the policy plays with probability ≈ 1 far harder than the sampled-token estimator', async () => {
    // A policy that plays one response token after the prompt with probability ≥ 0.99 (supervised steps), the
    // reference the same model as it started; only that token is sampled. The sampled-token estimator's gradient
    // there is ≈ (1 − π_ref/π)(1 − π) at the logit, the exact forward KL's π − π_ref: their sizes differ by ≈ (1 − π_ref)/(1 − π).
    const prompt = Int32Array.from([97, 98, 99])
    const played = 105
    const model = createTestModel(4)
    const reference = createTestModel(4)
    const parameters = model.trainableParameters()
    const sft = createAdamW(parameters, { learningRate: 1e-2 })
    const sftSettings: PolicyUpdateSettings = {
      model,
      parameters,
      optimizer: sft,
      policyLoss: createPolicyLoss('ppo-clip'),
      entropyCoefficient: 0,
      entropyExcluded: new Set(),
      kl: undefined,
      maxGradNorm: 1e9,
    }
    const rows = (advantage: number): PolicyUpdateRows => ({
      sequences: [{ promptIds: prompt, responseIds: Int32Array.from([played]) }],
      oldLogprobs: [Float32Array.from([0])],
      advantages: [Float32Array.from([advantage])],
    })
    const probability = () => tf.tidy(() => tf.softmax(model.forward([[...prompt]])).arraySync() as number[][][])[0]![prompt.length - 1]![played]!
    for (let step = 0; step < 200 && probability() < 0.99; step++) await updateMiniBatch(sftSettings, rows(1), 1e-2)
    const saturated = probability()
    expect(saturated).toBeGreaterThanOrEqual(0.99)
    const gradientNorm = async (estimator: 'full-forward' | 'low_var_kl') => {
      const settings: PolicyUpdateSettings = { ...sftSettings, kl: { coefficient: 1, estimator, reference } }
      const referenceLogprob = tf.tidy(() => (tf.logSoftmax(reference.forward([[...prompt]])).arraySync() as number[][][])[0]![prompt.length - 1]![played]!)
      const { gradients, terms, dispose } = accumulateGradients(settings, {
        ...rows(0),
        oldLogprobs: [Float32Array.from([Math.log(saturated)])],
        referenceLogprobs: [Float32Array.from([referenceLogprob])],
      })
      let squares = 0
      for (const gradient of gradients.values()) squares += tf.tidy(() => tf.sum(tf.square(gradient)).dataSync()[0]!)
      await readTerms(terms)
      dispose()
      return Math.sqrt(squares)
    }
    const exact = await gradientNorm('full-forward')
    const sampled = await gradientNorm('low_var_kl')
    expect(exact).toBeGreaterThan(20 * sampled)
    sft.dispose()
    model.dispose()
    reference.dispose()
  })
})
