import { createHash } from 'node:crypto'
import * as tf from '@tensorflow/tfjs-core'
import { afterAll, describe, expect, it } from 'vitest'
import { activateBackend, initTensors } from '@ludic/tensors'
import { createPolicyLoss, type PolicyLossName } from './create-policy-loss.js'
import { klEstimators, klLoss, type KlLossMetricTensors, type KlLossOptions } from './kl-penalty.js'
import { readLossMetrics } from './loss-metrics.js'
import type { PolicyLossInputs, PolicyLossMetricTensors } from './policy-loss.js'

/**
 * The loss values and gradients are those of the code before the metrics moved to tensors (recorded from
 * commit 3d81a06 on fixed inputs, bit for bit): only the metric side changed, so a deterministic training
 * run reproduces exactly. Each case records the loss (a float32, exact) and a digest of the float32 bits
 * of d loss / d logprobs. Set LUDIC_RECORD=1 to print the table for the code under test.
 */

/** mulberry32: a fixed stream of float32 inputs, independent of any other module. */
function stream(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const rows = 4
const tokens = 6
const lengths = [6, 4, 1, 0] // the last row has no valid token
const validAt = (index: number): boolean => index % tokens < lengths[Math.floor(index / tokens)]!

/** `[4, 6]` values from `f(uniform)` at valid tokens and NaN at masked ones (they must not matter). */
function matrix(seed: number, f: (uniform: number) => number, masked = Number.NaN): Float32Array {
  const next = stream(seed)
  return Float32Array.from({ length: rows * tokens }, (_, index) => {
    const value = f(next())
    return validAt(index) ? value : masked
  })
}

const logprobValues = matrix(1, (u) => -0.05 - 3 * u * u)
const shift = (seed: number, scale: number): Float32Array => {
  const noise = matrix(seed, (u) => (u - 0.5) * 2 * scale)
  return Float32Array.from(logprobValues, (value, index) => value + noise[index]!)
}
const oldLogprobValues = shift(2, 0.5)
const referenceLogprobValues = Float32Array.from(shift(3, 1.5), (value, index) => (index === 2 ? value - 4 : value)) // one large KL
const advantageValues = matrix(4, (u) => (u - 0.5) * 4)
const weightValues = matrix(5, (u) => 0.5 + u, 1)
const maskValues = Float32Array.from({ length: rows * tokens }, (_, index) => (validAt(index) ? 1 : 0))

interface Inputs {
  logprobs: tf.Tensor2D
  oldLogprobs: tf.Tensor2D
  referenceLogprobs: tf.Tensor2D
  advantages: tf.Tensor2D
  importanceWeights: tf.Tensor2D
  mask: tf.Tensor2D
  intMask: tf.Tensor2D
  boolMask: tf.Tensor2D
}

function makeInputs(): Inputs {
  const shape: [number, number] = [rows, tokens]
  return {
    logprobs: tf.tensor2d(logprobValues, shape),
    oldLogprobs: tf.tensor2d(oldLogprobValues, shape),
    referenceLogprobs: tf.tensor2d(referenceLogprobValues, shape),
    advantages: tf.tensor2d(advantageValues, shape),
    importanceWeights: tf.tensor2d(weightValues, shape),
    mask: tf.tensor2d(maskValues, shape),
    intMask: tf.tensor2d(Int32Array.from(maskValues), shape, 'int32'),
    boolMask: tf.tensor2d(Uint8Array.from(maskValues), shape, 'bool'),
  }
}

interface PolicyCase {
  label: string
  name: PolicyLossName
  options?: Record<string, unknown>
  inputs?: (inputs: Inputs) => Partial<PolicyLossInputs>
}

const weighted = (inputs: Inputs): Partial<PolicyLossInputs> => ({ importanceWeights: inputs.importanceWeights })
const modes = ['token-mean', 'token-sum', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'] as const

const policyCases: PolicyCase[] = [
  ...(['ppo-clip', 'gspo', 'cispo', 'pg', 'gpg', 'dro', 'gmpo', 'sapo', 'dppo-tv', 'dppo-kl'] as const).map((name) => ({ label: name, name })),
  { label: 'truncated-ppo budget 3', name: 'truncated-ppo', options: { generationBudget: 3 } },
  ...modes.map((aggregation) => ({
    label: `ppo-clip ${aggregation} weighted`,
    name: 'ppo-clip' as const,
    options: { clipHigh: 0.28, aggregation },
    inputs: weighted,
  })),
  { label: 'ppo-clip dp 2 token-mean', name: 'ppo-clip', options: { dataParallelSize: 2 }, inputs: () => ({ globalTokenCount: 20 }) },
  {
    label: 'ppo-clip dp 2 seq-mean-token-mean',
    name: 'ppo-clip',
    options: { dataParallelSize: 2, aggregation: 'seq-mean-token-mean' },
    inputs: () => ({ globalBatchSize: 6 }),
  },
  { label: 'ppo-clip seq-mean-token-sum-norm factor 10', name: 'ppo-clip', options: { aggregation: 'seq-mean-token-sum-norm', lossScaleFactor: 10 } },
  { label: 'ppo-clip int32 mask', name: 'ppo-clip', inputs: (inputs) => ({ mask: inputs.intMask }) },
  { label: 'ppo-clip bool mask', name: 'ppo-clip', options: { aggregation: 'seq-mean-token-mean' }, inputs: (inputs) => ({ mask: inputs.boolMask }) },
  { label: 'gmpo weighted', name: 'gmpo', options: { clipLow: 0.1, clipHigh: 0.3 }, inputs: weighted },
  { label: 'gspo weighted', name: 'gspo', options: { clipLow: 0.05, clipHigh: 0.05 }, inputs: weighted },
  { label: 'cispo token-sum weighted', name: 'cispo', options: { aggregation: 'token-sum' }, inputs: weighted },
  {
    label: 'dppo-kl clipC 1.5 seq-mean-token-mean',
    name: 'dppo-kl',
    options: { clipC: 1.5, clipLow: 0.05, clipHigh: 0.05, aggregation: 'seq-mean-token-mean' },
  },
  { label: 'dppo-tv weighted', name: 'dppo-tv', options: { clipLow: 0.05, clipHigh: 0.1 }, inputs: weighted },
  { label: 'sapo weighted', name: 'sapo', inputs: weighted },
  { label: 'dro seq-mean-token-sum', name: 'dro', options: { aggregation: 'seq-mean-token-sum' } },
  { label: 'pg seq-mean-token-mean weighted', name: 'pg', options: { aggregation: 'seq-mean-token-mean' }, inputs: weighted },
  { label: 'truncated-ppo budget 2 token-sum weighted', name: 'truncated-ppo', options: { generationBudget: 2, aggregation: 'token-sum' }, inputs: weighted },
]

const klCases: { label: string; options: KlLossOptions }[] = [
  ...klEstimators.map((estimator) => ({ label: `kl ${estimator}`, options: { estimator } })),
  ...modes.slice(1).map((aggregation) => ({ label: `kl k3 ${aggregation}`, options: { estimator: 'k3' as const, aggregation } })),
]

/** The first 16 hex digits of the SHA-256 of the float32 bits. */
function digest(values: Float32Array): string {
  return createHash('sha256')
    .update(new Uint8Array(values.buffer, values.byteOffset, values.byteLength))
    .digest('hex')
    .slice(0, 16)
}

/** Loss value and gradient digest of one case. */
type Recorded = readonly [loss: number, gradientDigest: string]

/** Loss value and gradient digest of one case, and its metrics (the loss value is also `pgLoss` / `klLoss`). */
function policyCase(testCase: PolicyCase, inputs: Inputs): [Recorded, PolicyLossMetricTensors] {
  const policyLoss = createPolicyLoss(testCase.name, (testCase.options ?? {}) as never)
  const base: PolicyLossInputs = {
    logprobs: inputs.logprobs,
    oldLogprobs: inputs.oldLogprobs,
    advantages: inputs.advantages,
    mask: inputs.mask,
    ...testCase.inputs?.(inputs),
  }
  let metrics: PolicyLossMetricTensors | undefined
  const { value, grad } = tf.valueAndGrad((logprobs: tf.Tensor) => {
    const result = policyLoss({ ...base, logprobs })
    metrics = result.metrics
    return result.loss
  })(inputs.logprobs)
  const recorded: Recorded = [value.dataSync()[0]!, digest(grad.dataSync() as Float32Array)]
  tf.dispose([value, grad])
  return [recorded, metrics!]
}

function klCase(options: KlLossOptions, inputs: Inputs): [Recorded, KlLossMetricTensors] {
  let metrics: KlLossMetricTensors | undefined
  const { value, grad } = tf.valueAndGrad((logprobs: tf.Tensor) => {
    const result = klLoss({ logprobs, referenceLogprobs: inputs.referenceLogprobs, mask: inputs.mask }, options)
    metrics = result.metrics
    return result.loss
  })(inputs.logprobs)
  const recorded: Recorded = [value.dataSync()[0]!, digest(grad.dataSync() as Float32Array)]
  tf.dispose([value, grad])
  return [recorded, metrics!]
}

const recorded: Record<string, Record<string, Recorded>> = {
  wasm: {
    'ppo-clip': [0.04405474662780762, 'c652e313ffe552d2'],
    gspo: [-0.3182849884033203, '327c560c263980c6'],
    cispo: [-0.1893121600151062, '079371b80448c131'],
    pg: [-0.2845841348171234, '514ce1740aaea3c3'],
    gpg: [-0.2845841348171234, '514ce1740aaea3c3'],
    dro: [-0.2821051776409149, 'daeeeccb2a49a3f5'],
    gmpo: [-0.2310848832130432, 'ffada3b9b5fd5c8d'],
    sapo: [-0.6382432579994202, 'b1e0febf649e93db'],
    'dppo-tv': [-0.10767053812742233, '07581443610e85ec'],
    'dppo-kl': [-0.10767053812742233, '07581443610e85ec'],
    'truncated-ppo budget 3': [-0.14731626212596893, 'bedfe31559fd7fd0'],
    'ppo-clip token-mean weighted': [0.02360677719116211, 'c67dfdcd8b315204'],
    'ppo-clip token-sum weighted': [0.2596745491027832, '896372897abcfe84'],
    'ppo-clip seq-mean-token-sum weighted': [0.08655818551778793, '5836eb4ede32469d'],
    'ppo-clip seq-mean-token-mean weighted': [-0.34400510787963867, 'e5557f41af289b6d'],
    'ppo-clip seq-mean-token-sum-norm weighted': [0.014426364563405514, 'b8f830ff7db4280b'],
    'ppo-clip dp 2 token-mean': [0.0484602227807045, '0c277684ea0091f3'],
    'ppo-clip dp 2 seq-mean-token-mean': [-0.30115121603012085, '20ef6842ae964158'],
    'ppo-clip seq-mean-token-sum-norm factor 10': [0.016153402626514435, 'e36ea4934ce70845'],
    'ppo-clip int32 mask': [0.04405474662780762, 'c652e313ffe552d2'],
    'ppo-clip bool mask': [-0.30115121603012085, '20ef6842ae964158'],
    'gmpo weighted': [-0.28077059984207153, '372cf64bc7faa635'],
    'gspo weighted': [-0.35029780864715576, '7597e9d336164931'],
    'cispo token-sum weighted': [-2.2387046813964844, 'c08748f76fb5790c'],
    'dppo-kl clipC 1.5 seq-mean-token-mean': [0.10688799619674683, 'c868b26c3e643268'],
    'dppo-tv weighted': [-0.15002478659152985, '2c950a742414cb44'],
    'sapo weighted': [-0.7209765315055847, 'b90273f4ff5a81e1'],
    'dro seq-mean-token-sum': [-1.0343856811523438, '24730860229d6ff9'],
    'pg seq-mean-token-mean weighted': [-0.05501943454146385, 'ff21bec62f23fb0a'],
    'truncated-ppo budget 2 token-sum weighted': [-1.7773849964141846, 'f519637b78b8c0b6'],
    'kl k1': [0.5784428715705872, '77407cf4ab4f4892'],
    'kl kl': [0.5784428715705872, '77407cf4ab4f4892'],
    'kl abs': [0.9873300790786743, 'e1d633105e2d2af1'],
    'kl k2': [1.0747380256652832, 'b2f9a2aeefd5d12a'],
    'kl mse': [1.0747380256652832, 'b2f9a2aeefd5d12a'],
    'kl k3': [0.5342172980308533, 'c9e61e4c2a90abdc'],
    'kl low_var_kl': [0.5342172980308533, 'c9e61e4c2a90abdc'],
    'kl k1+': [0.5784428715705872, 'b2f9a2aeefd5d12a'],
    'kl kl+': [0.5784428715705872, 'b2f9a2aeefd5d12a'],
    'kl abs+': [0.9873300790786743, 'b2f9a2aeefd5d12a'],
    'kl k2+': [1.0747380256652832, 'b2f9a2aeefd5d12a'],
    'kl mse+': [1.0747380256652832, 'b2f9a2aeefd5d12a'],
    'kl k3+': [0.5342172980308533, 'b2f9a2aeefd5d12a'],
    'kl low_var_kl+': [0.5342172980308533, 'b2f9a2aeefd5d12a'],
    'kl k3 token-sum': [5.87639045715332, 'cc0419320b4d5fdc'],
    'kl k3 seq-mean-token-sum': [1.9587968587875366, '2ca1b0d68a7b2cba'],
    'kl k3 seq-mean-token-mean': [0.414517879486084, 'bf3773cd15af3f6d'],
    'kl k3 seq-mean-token-sum-norm': [0.3264661431312561, '11fbf9a964152952'],
  },
  cpu: {
    'ppo-clip': [0.04405471682548523, 'c652e313ffe552d2'],
    gspo: [-0.3182849884033203, '327c560c263980c6'],
    cispo: [-0.1893121302127838, '079371b80448c131'],
    pg: [-0.2845841348171234, '514ce1740aaea3c3'],
    gpg: [-0.2845841348171234, '514ce1740aaea3c3'],
    dro: [-0.28210511803627014, 'daeeeccb2a49a3f5'],
    gmpo: [-0.2310848832130432, 'ffada3b9b5fd5c8d'],
    sapo: [-0.6382432579994202, '4fc85710f84103f3'],
    'dppo-tv': [-0.10767051577568054, '07581443610e85ec'],
    'dppo-kl': [-0.10767051577568054, '07581443610e85ec'],
    'truncated-ppo budget 3': [-0.14731629192829132, 'bedfe31559fd7fd0'],
    'ppo-clip token-mean weighted': [0.023606782779097557, 'c67dfdcd8b315204'],
    'ppo-clip token-sum weighted': [0.259674608707428, '896372897abcfe84'],
    'ppo-clip seq-mean-token-sum weighted': [0.08655818551778793, '5836eb4ede32469d'],
    'ppo-clip seq-mean-token-mean weighted': [-0.34400510787963867, 'e5557f41af289b6d'],
    'ppo-clip seq-mean-token-sum-norm weighted': [0.014426364563405514, 'b8f830ff7db4280b'],
    'ppo-clip dp 2 token-mean': [0.04846018925309181, '0c277684ea0091f3'],
    'ppo-clip dp 2 seq-mean-token-mean': [-0.30115121603012085, '20ef6842ae964158'],
    'ppo-clip seq-mean-token-sum-norm factor 10': [0.016153395175933838, 'e36ea4934ce70845'],
    'ppo-clip int32 mask': [0.04405471682548523, 'c652e313ffe552d2'],
    'ppo-clip bool mask': [-0.30115121603012085, '20ef6842ae964158'],
    'gmpo weighted': [-0.28077059984207153, '372cf64bc7faa635'],
    'gspo weighted': [-0.35029783844947815, '7597e9d336164931'],
    'cispo token-sum weighted': [-2.2387044429779053, 'c08748f76fb5790c'],
    'dppo-kl clipC 1.5 seq-mean-token-mean': [0.10688799619674683, 'c868b26c3e643268'],
    'dppo-tv weighted': [-0.15002478659152985, '2c950a742414cb44'],
    'sapo weighted': [-0.7209765315055847, '157ef3dcebdcc4e7'],
    'dro seq-mean-token-sum': [-1.0343855619430542, '24730860229d6ff9'],
    'pg seq-mean-token-mean weighted': [-0.05501941218972206, 'ff21bec62f23fb0a'],
    'truncated-ppo budget 2 token-sum weighted': [-1.7773849964141846, 'f519637b78b8c0b6'],
    'kl k1': [0.5784428715705872, '77407cf4ab4f4892'],
    'kl kl': [0.5784428715705872, '77407cf4ab4f4892'],
    'kl abs': [0.9873302578926086, 'e1d633105e2d2af1'],
    'kl k2': [1.0747380256652832, 'b2f9a2aeefd5d12a'],
    'kl mse': [1.0747380256652832, 'b2f9a2aeefd5d12a'],
    'kl k3': [0.5342172980308533, 'c9e61e4c2a90abdc'],
    'kl low_var_kl': [0.5342172980308533, 'c9e61e4c2a90abdc'],
    'kl k1+': [0.5784428715705872, 'b2f9a2aeefd5d12a'],
    'kl kl+': [0.5784428715705872, 'b2f9a2aeefd5d12a'],
    'kl abs+': [0.9873302578926086, 'b2f9a2aeefd5d12a'],
    'kl k2+': [1.0747380256652832, 'b2f9a2aeefd5d12a'],
    'kl mse+': [1.0747380256652832, 'b2f9a2aeefd5d12a'],
    'kl k3+': [0.5342172980308533, 'b2f9a2aeefd5d12a'],
    'kl low_var_kl+': [0.5342172980308533, 'b2f9a2aeefd5d12a'],
    'kl k3 token-sum': [5.87639045715332, 'cc0419320b4d5fdc'],
    'kl k3 seq-mean-token-sum': [1.9587968587875366, '2ca1b0d68a7b2cba'],
    'kl k3 seq-mean-token-mean': [0.41451790928840637, 'bf3773cd15af3f6d'],
    'kl k3 seq-mean-token-sum-norm': [0.3264661431312561, '11fbf9a964152952'],
  },
}

const record = process.env.LUDIC_RECORD === '1'

describe.each(['wasm', 'cpu'] as const)('loss values and gradients on %s are those recorded before the metrics moved to tensors', (backend) => {
  it('bit for bit, every policy loss and KL estimator', async () => {
    await activateBackend(backend) // these two backends whatever LUDIC_BACKEND says: the values were recorded on them
    const active = tf.getBackend()
    const expected = recorded[backend]
    const inputs = makeInputs()
    const actual: Record<string, Recorded> = {}
    for (const testCase of policyCases) {
      const [values, metrics] = policyCase(testCase, inputs)
      actual[testCase.label] = values
      expect((await readLossMetrics(metrics)).pgLoss, testCase.label).toBe(values[0])
    }
    for (const testCase of klCases) {
      const [values, metrics] = klCase(testCase.options, inputs)
      actual[testCase.label] = values
      expect((await readLossMetrics(metrics)).klLoss, testCase.label).toBe(values[0])
    }
    tf.dispose(Object.values(inputs))
    if (record) {
      const table = Object.entries(actual).map(([label, [loss, hash]]) => `    '${label}': [${loss}, '${hash}'],`)
      console.log(`${backend} (${active}):\n${table.join('\n')}`)
      return
    }
    expect(active).toBe(backend === 'cpu' ? 'cpu' : 'wasm')
    expect(actual).toEqual(expected)
  })
})

afterAll(() => initTensors({ backend: 'wasm', verbose: false })) // the backend under test (LUDIC_BACKEND, else wasm)
