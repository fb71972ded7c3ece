import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InvalidArgumentError, ShapeError } from '@ludic/core'
import { loadConformanceFixture, type FixtureName } from '@ludic/conformance-fixtures'
import { expectNoLeaks } from '@ludic/tensors/test'
import type { AggregationMode } from './aggregate-loss.js'
import { createPolicyLoss, policyLosses, policyLossNames, registerPolicyLoss, type PolicyLossName } from './create-policy-loss.js'
import { readLossMetrics } from './loss-metrics.js'
import type { PolicyLoss, PolicyLossInputs, PolicyLossMetrics, PolicyLossMetricTensors, PolicyLossResult } from './policy-loss.js'
import { createPpoClipLoss, type PpoClipOptions } from './ppo-clip-loss.js'
import { createRlPlusLoss } from './rl-plus-loss.js'
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

interface PolicyCaseInputs {
  old_log_prob: number[][]
  log_prob: number[][]
  advantages: number[][]
  response_mask: number[][]
  rollout_is_weights?: number[][]
}
interface PolicyCaseParams {
  loss_agg_mode: AggregationMode
  clip_ratio: number
  clip_ratio_low: number | null
  clip_ratio_high: number | null
  clip_ratio_c: number
  global_batch_info: { dp_size?: number; batch_num_tokens?: number; global_batch_size?: number; loss_scale_factor?: number }
  dro_beta?: number
  tau_pos?: number
  tau_neg?: number
}
interface PolicyCaseOutputs {
  pg_loss: number
  metrics: Record<string, number>
  grad_log_prob: number[][]
}

/** The `<file>` of each `verl/compute_policy_loss_<file>` fixture. */
type PolicyLossFile<Name = FixtureName> = Name extends `verl/compute_policy_loss_${infer File}` ? File : never

/** verl fixture file → Ludic loss name, and how the verl parameters map to its options. */
const verlPolicyLosses: { file: PolicyLossFile; name: PolicyLossName; options: (params: PolicyCaseParams) => Record<string, unknown> }[] = [
  { file: 'vanilla', name: 'ppo-clip', options: (params) => ({ ...clipRange(params), clipC: params.clip_ratio_c, ...aggregation(params) }) },
  { file: 'gspo', name: 'gspo', options: (params) => ({ ...clipRange(params), dataParallelSize: params.global_batch_info.dp_size ?? 1 }) },
  { file: 'cispo', name: 'cispo', options: (params) => ({ ...clipRange(params), ...aggregation(params) }) },
  { file: 'gpg', name: 'gpg', options: (params) => aggregation(params) },
  { file: 'dro', name: 'dro', options: (params) => ({ beta: params.dro_beta, ...aggregation(params) }) },
  { file: 'geo_mean', name: 'gmpo', options: (params) => clipRange(params) },
  {
    file: 'sapo',
    name: 'sapo',
    options: (params) => ({ tauPositive: params.tau_pos, tauNegative: params.tau_neg, dataParallelSize: params.global_batch_info.dp_size ?? 1 }),
  },
  { file: 'dppo_tv', name: 'dppo-tv', options: (params) => ({ ...clipRange(params), clipC: params.clip_ratio_c, ...aggregation(params) }) },
  { file: 'dppo_kl', name: 'dppo-kl', options: (params) => ({ ...clipRange(params), clipC: params.clip_ratio_c, ...aggregation(params) }) },
]

function clipRange(params: PolicyCaseParams): { clipLow: number; clipHigh: number } {
  return { clipLow: params.clip_ratio_low ?? params.clip_ratio, clipHigh: params.clip_ratio_high ?? params.clip_ratio }
}

function aggregation(params: PolicyCaseParams): Record<string, unknown> {
  return {
    aggregation: params.loss_agg_mode,
    dataParallelSize: params.global_batch_info.dp_size ?? 1,
    lossScaleFactor: params.global_batch_info.loss_scale_factor,
  }
}

const verlMetricNames = { 'actor/pg_clipfrac': 'clipFraction', 'actor/ppo_kl': 'approxKl', 'actor/pg_clipfrac_lower': 'clipFractionLower' } as const

describe.each(verlPolicyLosses)('policy loss $name = verl compute_policy_loss_$file', ({ file, name, options }) => {
  const path = `verl/compute_policy_loss_${file}.json`
  const fixture = loadConformanceFixture<PolicyCaseInputs, PolicyCaseParams, PolicyCaseOutputs>(`verl/compute_policy_loss_${file}`)
  const tracker = new ErrorTracker()
  afterAll(() => {
    console.info(tracker.summary(path))
  })

  it('matches the fixture case by case: loss, metrics and gradient', async () => {
    for (const testCase of fixture.cases) {
      const policyLoss = createPolicyLoss(name, options(testCase.params) as never)
      const tensors = {
        logprobs: tensor2d(testCase.inputs.log_prob),
        oldLogprobs: tensor2d(testCase.inputs.old_log_prob),
        advantages: tensor2d(testCase.inputs.advantages),
        mask: tensor2d(testCase.inputs.response_mask),
        importanceWeights: testCase.inputs.rollout_is_weights === undefined ? undefined : tensor2d(testCase.inputs.rollout_is_weights),
      }
      const { batch_num_tokens: globalTokenCount, global_batch_size: globalBatchSize } = testCase.params.global_batch_info
      const inputs: PolicyLossInputs = { ...tensors, globalTokenCount, globalBatchSize }
      const outputs = testCase.outputs!
      const result = policyLoss(inputs)
      const { loss } = result
      const metrics = await readLossMetrics(result.metrics)
      expectClose(loss.dataSync(), [outputs.pg_loss], `${testCase.id} pg_loss`, { tracker })
      expect(metrics.pgLoss).toBe(loss.dataSync()[0]!)
      for (const [verlName, value] of Object.entries(outputs.metrics)) {
        const ludicName = verlMetricNames[verlName as keyof typeof verlMetricNames]
        expect(ludicName, `${testCase.id}: unknown verl metric ${verlName}`).toBeDefined()
        expectClose([metrics[ludicName]], [value], `${testCase.id} ${verlName}`, { tracker })
      }
      const lossOnly = keepingMetrics(policyLoss)
      const gradient = tf.grad((logprobs: tf.Tensor) => lossOnly.loss({ ...inputs, logprobs }))(tensors.logprobs)
      await lossOnly.read()
      expectClose(gradient.dataSync(), flat(outputs.grad_log_prob), `${testCase.id} grad_log_prob`, { tracker })
      tf.dispose([loss, result.clippedTokens.low, result.clippedTokens.high, gradient, ...Object.values(tensors).filter((tensor) => tensor !== undefined)])
    }
  })
})

/**
 * `policyLoss(inputs).loss` for `tf.grad` and finite differences, its metrics kept aside to read (and free)
 * with `read()` afterwards, as a trainer does after the step.
 */
function keepingMetrics(policyLoss: PolicyLoss): { loss: (inputs: PolicyLossInputs) => tf.Scalar; read: () => Promise<PolicyLossMetrics[]> } {
  const pending: PolicyLossMetricTensors[] = []
  return {
    loss: (inputs) => {
      const { loss, metrics } = policyLoss(inputs)
      pending.push(metrics)
      return loss
    },
    read: async () => {
      const read: PolicyLossMetrics[] = []
      for (const metrics of pending.splice(0)) read.push(await readLossMetrics(metrics))
      return read
    },
  }
}

/** Small random inputs: [3, 5], second row shorter, third empty except one token. */
function smallInputs(seed: number, sequenceAdvantages = false): PolicyLossInputs {
  const logprobs = tf.tidy(() => tf.neg(tf.abs(randomTensor([3, 5], seed, 1, -1))))
  const oldLogprobs = tf.tidy(() => tf.add(logprobs, randomTensor([3, 5], seed + 1, 0.15)))
  const advantages = sequenceAdvantages ? tf.tidy(() => tf.tile(randomTensor([3, 1], seed + 2), [1, 5])) : randomTensor([3, 5], seed + 2)
  return { logprobs, oldLogprobs, advantages, mask: prefixMask([5, 3, 1], 5) }
}

describe('every policy loss', () => {
  it.each(policyLossNames)('%s: gradient matches finite differences, no leaks', async (name) => {
    const options = name === 'truncated-ppo' ? { generationBudget: 4 } : {}
    const policyLoss = createPolicyLoss(name, options as never)
    // gspo's token ratio equals the sequence ratio in value: with sequence-level advantages its gradient is
    // the derivative of its value. cispo and dppo detach the ratio: moving oldLogprobs with logprobs keeps
    // the detached ratio fixed, so the finite difference sees only the differentiated factor.
    const inputs = smallInputs(11, name === 'gspo')
    const detachedRatio = name === 'cispo' || name === 'dppo-tv' || name === 'dppo-kl'
    const lossOnly = keepingMetrics(policyLoss)
    const f = (logprobs: tf.Tensor): tf.Scalar =>
      lossOnly.loss({ ...inputs, logprobs, oldLogprobs: detachedRatio ? tf.add(inputs.oldLogprobs, tf.sub(logprobs, inputs.logprobs)) : inputs.oldLogprobs })
    expectGradientMatchesFiniteDifferences(f, inputs.logprobs, { label: name, step: 1e-3, tolerance: 5e-3 })
    await lossOnly.read()
    // The loss and the clipped-token flags are the caller's; the metrics are freed by their read.
    await expectNoLeaks(
      async () => {
        const { loss, metrics, clippedTokens } = policyLoss(inputs)
        await readLossMetrics(metrics)
        return [loss, clippedTokens]
      },
      { label: `${name} loss` },
    )
    await expectNoLeaks(
      async () => {
        const gradient = tf.grad((logprobs: tf.Tensor) => lossOnly.loss({ ...inputs, logprobs }))(inputs.logprobs)
        await lossOnly.read()
        return gradient
      },
      { label: `${name} gradient` },
    )
    tf.dispose(Object.values(inputs) as tf.Tensor[])
  })

  it('ignore masked positions, even NaN there, in value, gradient and checks', async () => {
    const inputs = smallInputs(3)
    const nanLogprobs = tf.tidy(() => tf.where(tf.equal(inputs.mask, 0), tf.fill([3, 5], Number.NaN), inputs.logprobs))
    for (const name of policyLossNames) {
      const policyLoss = createPolicyLoss(name, (name === 'truncated-ppo' ? { generationBudget: 5 } : {}) as never)
      const clean = policyLoss(inputs)
      const nanOld = tf.add(nanLogprobs, 0.1)
      const dirty = policyLoss({ ...inputs, logprobs: nanLogprobs, oldLogprobs: nanOld })
      const lossOnly = keepingMetrics(policyLoss)
      const gradient = tf.grad((logprobs: tf.Tensor) => lossOnly.loss({ ...inputs, logprobs }))(nanLogprobs)
      const [dirtyMetrics] = await lossOnly.read()
      expect(Number.isFinite(dirty.loss.dataSync()[0]), name).toBe(true)
      expect(Array.from(gradient.dataSync()).every(Number.isFinite), name).toBe(true)
      expect(Number.isFinite((await readLossMetrics(clean.metrics)).approxKl), name).toBe(true)
      expect(Object.values(await readLossMetrics(dirty.metrics)).every(Number.isFinite), name).toBe(true)
      expect(Number.isFinite(dirtyMetrics!.ratioMax), name).toBe(true)
      tf.dispose([
        clean.loss,
        dirty.loss,
        gradient,
        nanOld,
        clean.clippedTokens.low,
        clean.clippedTokens.high,
        dirty.clippedTokens.low,
        dirty.clippedTokens.high,
      ])
    }
    tf.dispose([nanLogprobs, ...(Object.values(inputs) as tf.Tensor[])])
  })

  it('report clipped tokens consistently with the metrics', async () => {
    const inputs = smallInputs(5)
    const oldLogprobs = tf.tidy(() => tf.add(inputs.logprobs, randomTensor([3, 5], 99, 0.6)))
    const result = createPolicyLoss('ppo-clip', { clipLow: 0.1, clipHigh: 0.2 })({ ...inputs, oldLogprobs })
    const { loss, clippedTokens } = result
    const metrics = await readLossMetrics(result.metrics)
    expect(clippedTokens.low.dtype).toBe('bool')
    expect(clippedTokens.low.shape).toEqual([3, 5])
    const low = Array.from(clippedTokens.low.dataSync())
    const high = Array.from(clippedTokens.high.dataSync())
    const lows = low.reduce((a, b) => a + b, 0)
    const highs = high.reduce((a, b) => a + b, 0)
    expect(lows).toBe(metrics.clippedLowTokens)
    expect(highs).toBe(metrics.clippedHighTokens)
    expect(lows + highs).toBeGreaterThan(0)
    expect(metrics.clipFraction).toBeCloseTo((lows + highs) / metrics.validTokens, 6)
    expect(metrics.validTokens).toBe(9)
    expect(metrics.ratioMin).toBeLessThanOrEqual(metrics.ratioMean)
    expect(metrics.ratioMean).toBeLessThanOrEqual(metrics.ratioMax)
    // Flags only at valid tokens: the third row has one.
    expect(low.slice(11).concat(high.slice(11))).toEqual(new Array(8).fill(0))
    tf.dispose([loss, clippedTokens.low, clippedTokens.high, oldLogprobs, ...(Object.values(inputs) as tf.Tensor[])])
  })

  it('name bad arguments: shapes and dtypes at the call, values when the metrics are read', async () => {
    const inputs = smallInputs(2)
    expect(() => createPolicyLoss('ppo' as PolicyLossName)).toThrow(/'name'.*known: ppo-clip, truncated-ppo, gspo/)
    expect(() => createPolicyLoss('ppo-clip', { clipC: 1 })).toThrow(/options.clipC.*greater than 1/)
    expect(() => createPolicyLoss('ppo-clip', { clipLow: -0.1 })).toThrow(InvalidArgumentError)
    // ppo-clip's ratio floor 1 − clipLow is not negative; GMPO clips the log-ratio, where clipLow above 1 is a range.
    expect(() => createPolicyLoss('ppo-clip', { clipLow: 1.5 })).toThrow(/options.clipLow/)
    expect(() => createPolicyLoss('truncated-ppo', { clipLow: 1.5, generationBudget: 4 })).toThrow(/options.clipLow/)
    expect(() => createPolicyLoss('gmpo', { clipLow: 1.5 })).not.toThrow()
    expect(() => createPolicyLoss('ppo-clip', { clip: 0.2 } as never)).toThrow(/options/)
    expect(() => createPolicyLoss('gspo', { aggregation: 'token-mean' } as never)).toThrow(/options.aggregation/)
    expect(() => createPolicyLoss('truncated-ppo', {} as never)).toThrow(/options.generationBudget/)
    const policyLoss = createPolicyLoss('ppo-clip')
    const wrongShape = tf.zeros([3, 4])
    expect(() => policyLoss({ ...inputs, advantages: wrongShape })).toThrow(ShapeError)
    expect(() => policyLoss({ ...inputs, advantages: wrongShape })).toThrow(/inputs.advantages/)
    const ints = tf.zeros([3, 5], 'int32')
    expect(() => policyLoss({ ...inputs, logprobs: ints })).toThrow(/inputs.logprobs.*float32/)
    expect(() => createPolicyLoss('ppo-clip', { dataParallelSize: 2 })(inputs)).toThrow(/globalTokenCount.*required/)
    expect(() => policyLoss({ ...inputs, globalTokenCount: -1 })).toThrow(/inputs.globalTokenCount/)
    expect(() => policyLoss(undefined as never)).toThrow(/'inputs'/)
    // Value checks run on the device with the loss and throw when its metrics are read.
    const readOf = (result: PolicyLossResult): Promise<PolicyLossMetrics> => {
      tf.dispose([result.loss, result.clippedTokens.low, result.clippedTokens.high])
      return readLossMetrics(result.metrics)
    }
    const nan = tf.tidy(() => tf.where(tf.equal(tf.reshape(tf.range(0, 15), [3, 5]), 6), tf.fill([3, 5], Number.NaN), inputs.advantages))
    await expect(readOf(policyLoss({ ...inputs, advantages: nan }))).rejects.toThrow(/inputs.advantages.*not finite at \[1, 1\], a valid token$/)
    const empty = tf.zeros([3, 5])
    await expect(readOf(policyLoss({ ...inputs, mask: empty }))).rejects.toThrow(/'inputs.mask'.*no valid token.*divide by zero/)
    await expect(readOf(createPolicyLoss('ppo-clip', { aggregation: 'seq-mean-token-mean' })({ ...inputs, mask: empty }))).rejects.toThrow(/no sequence/)
    const negative = tf.fill([3, 5], -1)
    await expect(readOf(policyLoss({ ...inputs, importanceWeights: negative }))).rejects.toThrow(
      /importanceWeights.*non-negative \(at \[0, 0\]\) \(and 8 more\)/,
    )
    const notBinary = tf.tensor2d([
      [1, 1, 1, 1, 1],
      [1, 1, 0.5, 0, 0],
      [1, 0, 0, 0, 0],
    ])
    await expect(readOf(policyLoss({ ...inputs, mask: notBinary }))).rejects.toThrow(/'inputs.mask' \(value: 0.5\).*only 0 and 1 \(\[1, 2\]\)/)
    const infiniteWeight = tf.tensor2d([
      [1, 1, 1, 1, 1],
      [1, 1, Number.POSITIVE_INFINITY, 1, 1],
      [1, 1, 1, 1, 1],
    ])
    await expect(readOf(policyLoss({ ...inputs, importanceWeights: infiniteWeight }))).rejects.toThrow(
      /'inputs.importanceWeights' \(value: Infinity\).*not finite at \[1, 2\]/,
    )
    const error = await readOf(policyLoss({ ...inputs, advantages: nan })).catch((caught: unknown) => caught)
    expect(InvalidArgumentError.isInstance(error) && error.argument).toBe('inputs.advantages')
    tf.dispose([wrongShape, ints, nan, empty, negative, notBinary, infiniteWeight, ...(Object.values(inputs) as tf.Tensor[])])
  })
})

describe("'rl-plus' by name", () => {
  it('is createRlPlusLoss: with externalMask the same loss, gradient and metrics; without it every token internal (−ρ·A); no leaks', async () => {
    const inputs = smallInputs(21)
    const externalMask = tf.tensor2d(
      [
        [true, false, true, false, false],
        [false, false, false, false, false],
        [true, false, false, false, false],
      ],
      [3, 5],
      'bool',
    )
    const allInternal = tf.zeros([3, 5], 'bool')
    const byName = createPolicyLoss('rl-plus', { explorationGamma: 0.5 })
    const direct = createRlPlusLoss({ explorationGamma: 0.5 })
    const valueAndGradient = async (loss: PolicyLoss, extra: Partial<PolicyLossInputs>) => {
      const lossOnly = keepingMetrics(loss)
      const gradient = tf.grad((logprobs: tf.Tensor) => lossOnly.loss({ ...inputs, ...extra, logprobs }))(inputs.logprobs)
      const [metrics] = await lossOnly.read()
      const values = { gradient: Array.from(gradient.dataSync()), metrics }
      gradient.dispose()
      return values
    }
    const external = await valueAndGradient(byName, { externalMask })
    expect(external).toEqual(await valueAndGradient(direct as PolicyLoss, { externalMask }))
    const internal = await valueAndGradient(byName, {})
    expect(internal).toEqual(await valueAndGradient(direct as PolicyLoss, { externalMask: allInternal }))
    // With no external token and no clip, RL-PLUS is −ρ·A: ppo-clip's unclipped branch, its gradient −ρ·A/n.
    const ratio = tf.tidy(() => Array.from(tf.exp(tf.sub(inputs.logprobs, inputs.oldLogprobs)).dataSync()))
    const advantages = Array.from(inputs.advantages.dataSync())
    const mask = Array.from(inputs.mask.dataSync())
    const expected = ratio.map((value, index) => (mask[index] === 1 ? (-value * advantages[index]!) / 9 : 0))
    expectClose(internal.gradient, expected, 'rl-plus without externalMask')
    expect(external.gradient).not.toEqual(internal.gradient)
    await expectNoLeaks(
      async () => {
        const { loss, metrics, clippedTokens } = byName(inputs)
        await readLossMetrics(metrics)
        return [loss, clippedTokens]
      },
      { label: 'rl-plus without externalMask' },
    )
    expect(() => byName({ ...inputs, externalMask: tf.zeros([3, 5]) })).toThrow(/inputs.externalMask.*bool/)
    expect(() => createPolicyLoss('rl-plus', { explorationGamma: -1 })).toThrow(/options.explorationGamma/)
    tf.dispose([externalMask, allInternal, ...(Object.values(inputs) as tf.Tensor[])])
  })
})

describe('policyLosses: the registry createPolicyLoss goes through', () => {
  const builtInNames = ['ppo-clip', 'truncated-ppo', 'gspo', 'cispo', 'pg', 'gpg', 'dro', 'gmpo', 'sapo', 'dppo-tv', 'dppo-kl', 'rl-plus']

  /** The loss value and its gradient with respect to `logprobs`, as plain numbers. */
  const lossAndGradient = async (policyLoss: PolicyLoss, inputs: PolicyLossInputs) => {
    const lossOnly = keepingMetrics(policyLoss)
    const { value, grads } = tf.valueAndGrads((logprobs: tf.Tensor) => lossOnly.loss({ ...inputs, logprobs }))([inputs.logprobs])
    const [metrics] = await lossOnly.read()
    const read = { value: value.dataSync()[0], gradient: Array.from(grads[0]!.dataSync()), metrics }
    tf.dispose([value, ...grads])
    return read
  }

  it('knows the built-in losses first, each the same loss as createPolicyLoss makes', async () => {
    expect(policyLosses.names().slice(0, builtInNames.length)).toEqual(builtInNames)
    expect(policyLossNames).toEqual(builtInNames)
    const inputs = smallInputs(31)
    for (const name of policyLossNames) {
      const options = (name === 'truncated-ppo' ? { generationBudget: 4 } : {}) as never
      const byRegistry = await lossAndGradient(policyLosses.create(name, options), inputs)
      expect(byRegistry, name).toEqual(await lossAndGradient(createPolicyLoss(name, options), inputs))
    }
    expect(() => policyLosses.create('ppo-clip', { clipLow: -1 })).toThrow(/options.clipLow/)
    // Built-in names keep their typed options (type-check fails if these lines compile), registered ones take any.
    // @ts-expect-error truncated-ppo needs its options
    expect(() => createPolicyLoss('truncated-ppo')).toThrow(/'options'/)
    // @ts-expect-error ppo-clip has no option `clip`
    expect(() => policyLosses.create('ppo-clip', { clip: 0.2 })).toThrow(/options/)
    tf.dispose(Object.values(inputs) as tf.Tensor[])
  })

  it('adds a loss under a new name: created by name through both, options passed to its factory', async () => {
    const received: unknown[] = []
    const tight = (options?: PpoClipOptions): PolicyLoss => {
      received.push(options)
      return createPpoClipLoss({ clipLow: 0.05, clipHigh: 0.05, ...options })
    }
    registerPolicyLoss('ppo-clip-tight', tight)
    expect(policyLosses.names().at(-1)).toBe('ppo-clip-tight')
    const inputs = smallInputs(41)
    const expected = await lossAndGradient(createPpoClipLoss({ clipLow: 0.05, clipHigh: 0.3 }), inputs)
    expect(await lossAndGradient(policyLosses.create('ppo-clip-tight', { clipHigh: 0.3 }), inputs)).toEqual(expected)
    expect(await lossAndGradient(createPolicyLoss('ppo-clip-tight', { clipHigh: 0.3 }), inputs)).toEqual(expected)
    expect(received).toEqual([{ clipHigh: 0.3 }, { clipHigh: 0.3 }])
    expect(() => createPolicyLoss('ppo-clip-tight', { clipLow: -1 })).toThrow(/options.clipLow/) // its factory checks them
    tf.dispose(Object.values(inputs) as tf.Tensor[])
  })

  it('refuses a taken name, an empty name and a factory that is not a function; an unknown name lists the known ones', () => {
    const factory = () => createPpoClipLoss()
    registerPolicyLoss('registered-twice', factory)
    const errorOf = (register: () => void) => {
      try {
        register()
      } catch (error) {
        return error
      }
      throw new Error('did not throw')
    }
    for (const [register, argument, message] of [
      [() => registerPolicyLoss('registered-twice', factory), 'name', /'name' \(value: "registered-twice"\).*already registered/],
      [() => registerPolicyLoss('ppo-clip', factory), 'name', /'name' \(value: "ppo-clip"\).*already registered/],
      [() => registerPolicyLoss('', factory), 'name', /'name' \(value: ""\): must be a non-empty string/],
      [() => registerPolicyLoss(7 as never, factory), 'name', /'name' \(value: 7\)/],
      [() => registerPolicyLoss('not-a-function', 'ppo-clip' as never), 'factory', /'factory' \(value: "ppo-clip"\): must be a function/],
    ] as const) {
      const error = errorOf(register)
      expect(InvalidArgumentError.isInstance(error), String(error)).toBe(true)
      expect((error as InvalidArgumentError).argument).toBe(argument)
      expect((error as Error).message).toMatch(message)
    }
    expect(policyLosses.names().filter((name) => name === 'registered-twice')).toHaveLength(1)
    expect(policyLosses.names()).not.toContain('not-a-function')
    expect(() => policyLosses.create('ppo')).toThrow(/'name' \(value: "ppo"\): is not a registered policy loss; known: ppo-clip, .*registered-twice/)
    expect(() => createPolicyLoss('ppo')).toThrow(InvalidArgumentError)
    registerPolicyLoss('returns-nothing', (() => undefined) as never)
    expect(() => policyLosses.create('returns-nothing')).toThrow(/'name' \(value: "returns-nothing"\).*returned undefined, not a policy loss function/)
  })
})
