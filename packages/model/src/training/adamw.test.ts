import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InvalidArgumentError } from '@ludic/core'
import { initTensors } from '@ludic/tensors'
import { expectNoLeaks } from '@ludic/tensors/test'
import { createAdamW } from './adamw.js'
import { clipGradientsByGlobalNorm } from './clip-gradients-by-global-norm.js'
import { warmupCosineSchedule } from './learning-rate-schedules.js'
import { AgreementTracker, loadOptimizerReferences, tensorsOf } from '../test/optimizer-references.js'

beforeAll(async () => {
  await initTensors({ backend: 'wasm', verbose: false })
})

const references = loadOptimizerReferences()
const agreement = new AgreementTracker()
const fusedAgreement = { parameters: new AgreementTracker(), moments: new AgreementTracker() }
const clipAgreement = new AgreementTracker()
/**
 * torch's fused multiply-adds (lerp, addcmul) round once where tf rounds twice, and sums of squares are
 * accumulated in another order: a few ulp after several steps.
 */
const maxUlp = 8
/**
 * TensorFlow's fused Adam (the native backend's default) computes the moments' rates 1 − β in float32 from a float32
 * β: 1 − float32(0.999) = 0.99998712e-3, 1.3e-5 relative off torch's 1e-3 (and 1 − float32(0.9) 2.4e-7 off), so the
 * second moment is ~1.3e-5 relative off torch's (~200 ulp) and the parameters, whose steps are small beside them, a few
 * ulp more than the composed path's.
 */
const fusedTolerance = { parameterUlp: 12, momentRelative: 2e-5 }
/** The paths checked against torch: the composed ops everywhere, TensorFlow's fused Adam where the backend has it. */
const paths = process.env.LUDIC_BACKEND === 'tensorflow' ? (['composed', 'fused'] as const) : (['composed'] as const)

afterAll(() => {
  console.info(`AdamW vs torch ${references.torch} (${tf.getBackend()}): parameters and moments: ${agreement.summary()}`)
  if (paths.length > 1) {
    console.info(`fused AdamW vs torch ${references.torch} (${tf.getBackend()}): parameters: ${fusedAgreement.parameters.summary()}`)
    console.info(`fused AdamW vs torch ${references.torch} (${tf.getBackend()}): moments: ${fusedAgreement.moments.summary()}`)
  }
  console.info(`AdamW vs torch ${references.torch} (${tf.getBackend()}): clipping inside the schedule case: ${clipAgreement.summary()}`)
})

/** Compares a moment with torch's: within maxUlp on the composed path, within the relative bound on the fused one. */
function compareMoment(fused: boolean, actual: Float32Array, expected: number[], label: string): void {
  if (!fused) {
    agreement.compare(actual, expected, label, maxUlp)
    return
  }
  fusedAgreement.moments.compare(actual, expected, label, Number.POSITIVE_INFINITY)
  for (const [index, value] of expected.entries()) {
    expect(Math.abs(actual[index]! - value), `${label}[${index}]`).toBeLessThanOrEqual(fusedTolerance.momentRelative * Math.abs(value) + 1e-12)
  }
}

function variablesOf(values: Record<string, number[]>, shapes: Record<string, number[]>): Map<string, tf.Variable> {
  return new Map(Object.entries(values).map(([name, data]) => [name, tf.variable(tf.tensor(data, shapes[name]!, 'float32'))]))
}

describe('createAdamW against torch', () => {
  for (const path of paths)
    for (const reference of references.optimizer) {
      it(`${reference.id} (${path}): ${reference.description}`, async () => {
        const fused = path === 'fused'
        const parameters = variablesOf(reference.initial, reference.shapes)
        const optimizer = createAdamW(parameters, { ...reference.options, fused })
        const schedule = reference.schedule === null ? undefined : warmupCosineSchedule(reference.schedule)
        for (const [index, step] of reference.steps.entries()) {
          const gradients = tensorsOf(step.gradients, reference.shapes)
          let applied = gradients
          if (reference.clipMaxNorm !== null) {
            const clipped = clipGradientsByGlobalNorm(gradients, reference.clipMaxNorm)
            clipAgreement.compare([clipped.norm], [step.clip!.norm], `${reference.id} step ${index} norm`, 2)
            for (const [name, gradient] of clipped.gradients) {
              clipAgreement.compare(gradient.dataSync(), step.clip!.clipped[name]!, `${reference.id} step ${index} clipped ${name}`, 3)
            }
            applied = clipped.gradients
          }
          const learningRate = reference.options.learningRate * (schedule?.(index) ?? 1)
          expect(learningRate).toBeCloseTo(step.learningRate, 15)
          const before = tf.memory().numTensors
          const result = optimizer.step(applied, { learningRate })
          expect(tf.memory().numTensors, 'numTensors after a step').toBe(before)
          expect(result).toEqual({ step: index + 1, learningRate })
          for (const [name, parameter] of parameters) {
            const label = `${reference.id} step ${index + 1} ${name}`
            if (fused) fusedAgreement.parameters.compare(parameter.dataSync(), step.expected[name]!, label, fusedTolerance.parameterUlp)
            else agreement.compare(parameter.dataSync(), step.expected[name]!, label, maxUlp)
          }
          tf.dispose([...gradients.values(), ...(applied === gradients ? [] : applied.values())])
        }
        const state = await optimizer.exportState()
        expect(state.step).toBe(reference.finalState.step)
        compareMoment(fused, state.tensors.get('lm_head.weight.exp_avg')!.data, reference.finalState['lm_head.weight.exp_avg'], `${reference.id} exp_avg`)
        compareMoment(
          fused,
          state.tensors.get('lm_head.weight.exp_avg_sq')!.data,
          reference.finalState['lm_head.weight.exp_avg_sq'],
          `${reference.id} exp_avg_sq`,
        )
        optimizer.dispose()
        tf.dispose([...parameters.values()])
      })
    }
})

describe('createAdamW', () => {
  const shapes = { 'a.weight': [3, 2], 'a.bias': [2] }
  const makeParameters = () => variablesOf({ 'a.weight': [0.1, -0.2, 0.3, 0.4, -0.5, 0.6], 'a.bias': [0.5, -0.5] }, shapes)
  const makeGradients = (scale: number) => tensorsOf({ 'a.weight': [1, 2, 3, -1, -2, -3].map((x) => x * scale), 'a.bias': [0.5 * scale, -1] }, shapes)

  it('creates its moments up front: numTensors is unchanged by every step, the first included', async () => {
    const parameters = makeParameters()
    const gradients = makeGradients(1)
    const optimizer = createAdamW(parameters, { weightDecay: 0.1, excludeFromWeightDecay: ['*.bias'] })
    await expectNoLeaks(() => void optimizer.step(gradients), { warmup: 0, repeats: 3, label: 'AdamW step' })
    expect(optimizer.stepCount).toBe(3)
    optimizer.dispose()
    tf.dispose([...parameters.values(), ...gradients.values()])
  })

  it('exports and imports its state: a copy resumes bit for bit', async () => {
    const first = makeParameters()
    const second = makeParameters()
    const optimizerA = createAdamW(first, { learningRate: 0.05, weightDecay: 0.1 })
    const optimizerB = createAdamW(second, { learningRate: 0.05, weightDecay: 0.1 })
    for (let step = 1; step <= 3; step++) {
      const gradients = makeGradients(step)
      optimizerA.step(gradients)
      tf.dispose([...gradients.values()])
    }
    const state = await optimizerA.exportState()
    expect([...state.tensors.keys()]).toEqual(['a.weight.exp_avg', 'a.weight.exp_avg_sq', 'a.bias.exp_avg', 'a.bias.exp_avg_sq'])
    expect(state.tensors.get('a.weight.exp_avg')!.shape).toEqual([3, 2])
    for (const [name, parameter] of first) second.get(name)!.assign(parameter)
    optimizerB.importState(state)
    expect(optimizerB.stepCount).toBe(3)
    for (let step = 4; step <= 5; step++) {
      const gradients = makeGradients(step)
      optimizerA.step(gradients, { learningRate: 0.01 * step })
      optimizerB.step(gradients, { learningRate: 0.01 * step })
      tf.dispose([...gradients.values()])
    }
    for (const [name, parameter] of first) expect(second.get(name)!.dataSync()).toEqual(parameter.dataSync())
    expect(() => optimizerB.importState({ step: 1, tensors: new Map([['a.weight.exp_avg', { shape: [2, 3], data: new Float32Array(6) }]]) })).toThrow(
      /missing a.weight.exp_avg_sq, a.bias.exp_avg, a.bias.exp_avg_sq; misshaped a.weight.exp_avg \(shape \[2,3\], parameter \[3, 2\]\)/,
    )
    optimizerA.dispose()
    optimizerB.dispose()
    tf.dispose([...first.values(), ...second.values()])
  })

  if (paths.length > 1) {
    it('fused by default on the native backend: equals the composed path to its tolerance, follows parameters assigned from outside, frees what it made', () => {
      const run = (options: { fused?: boolean }) => {
        const parameters = makeParameters()
        const before = tf.memory().numTensors
        const optimizer = createAdamW(parameters, { learningRate: 0.05, weightDecay: 0.1, excludeFromWeightDecay: ['*.bias'], ...options })
        expect(optimizer.fused).toBe(options.fused ?? true)
        for (let step = 1; step <= 4; step++) {
          // Between steps 2 and 3 every parameter is assigned from outside (as loading a checkpoint does).
          if (step === 3) {
            for (const parameter of parameters.values()) {
              const shifted = tf.add(parameter, 1)
              parameter.assign(shifted)
              shifted.dispose()
            }
          }
          const gradients = makeGradients(step)
          optimizer.step(gradients)
          tf.dispose([...gradients.values()])
        }
        optimizer.dispose()
        expect(tf.memory().numTensors, `numTensors after the optimizer (${JSON.stringify(options)}) was disposed`).toBe(before)
        const values = new Map([...parameters].map(([name, parameter]) => [name, parameter.dataSync().slice()]))
        tf.dispose([...parameters.values()])
        return values
      }
      const byDefault = run({})
      const fused = run({ fused: true })
      const composed = run({ fused: false })
      const tracker = new AgreementTracker()
      for (const [name, values] of composed) {
        expect(byDefault.get(name), `${name}: the default is the fused path`).toEqual(fused.get(name))
        tracker.compare(fused.get(name)!, [...values], `fused vs composed ${name}`, fusedTolerance.parameterUlp)
      }
      // Without following the assignment the fused parameters would be ~1 away from the composed ones.
      expect(tracker.compared).toBe(8)
    })
  } else {
    it(`fused: true is refused on ${process.env.LUDIC_BACKEND ?? 'wasm'}, naming options.fused`, () => {
      const parameters = makeParameters()
      expect(() => createAdamW(parameters, { fused: true })).toThrow(InvalidArgumentError)
      expect(() => createAdamW(parameters, { fused: true })).toThrow(/'options\.fused' \(value: true\).*needs the native TensorFlow backend/)
      const composed = createAdamW(parameters, { fused: false })
      const byDefault = createAdamW(parameters)
      expect([composed.fused, byDefault.fused]).toEqual([false, false])
      composed.dispose()
      byDefault.dispose()
      tf.dispose([...parameters.values()])
    })
  }

  it('matches exclusion patterns with the ParameterNamePattern rule (whole-name globs, RegExps)', () => {
    const parameters = new Map([
      ['model.norm.weight', tf.variable(tf.ones([2]))],
      ['model.layers.0.mlp.up_proj.bias', tf.variable(tf.ones([2]))],
      ['model.layers.0.mlp.up_proj.weight', tf.variable(tf.ones([2]))],
      ['model.layernorm_like.weight', tf.variable(tf.ones([2]))],
    ])
    const optimizer = createAdamW(parameters, { excludeFromWeightDecay: ['**norm.weight', /\.bias$/] })
    expect([...parameters.keys()].map((name) => optimizer.decays(name))).toEqual([false, false, true, true])
    const segments = createAdamW(parameters, { excludeFromWeightDecay: ['*norm.weight', 'model.*.weight'] }) // `*` stays inside one segment
    expect([...parameters.keys()].map((name) => segments.decays(name))).toEqual([false, true, true, false])
    segments.dispose()
    optimizer.dispose()
    expect(createAdamW(parameters, { weightDecay: 0 }).decays('model.layers.0.mlp.up_proj.weight')).toBe(false)
    tf.dispose([...parameters.values()])
  })

  it('names bad options, gradients and parameters', () => {
    const parameters = makeParameters()
    expect(() => createAdamW(parameters, { beta1: 1 })).toThrow(InvalidArgumentError)
    expect(() => createAdamW(parameters, { beta1: 1 })).toThrow(/'options\.beta1' \(value: 1\)/)
    expect(() => createAdamW(parameters, { learningRate: -1 })).toThrow(/'options\.learningRate' \(value: -1\)/)
    expect(() => createAdamW(parameters, { momentum: 0.9 } as never)).toThrow(/'options'/)
    const tied = new Map([...parameters, ['b.weight', parameters.get('a.weight')!]])
    expect(() => createAdamW(tied)).toThrow(/'parameters\["b.weight"\]'.*same variable as "a.weight"/)
    const optimizer = createAdamW(parameters)
    const gradients = makeGradients(1)
    const partial = new Map([
      ['a.weight', gradients.get('a.weight')!],
      ['c', gradients.get('a.bias')!],
    ])
    expect(() => optimizer.step(partial)).toThrow(/missing gradients for a.bias; gradients for unknown parameters c/)
    const misshaped = new Map([
      ['a.weight', gradients.get('a.bias')!],
      ['a.bias', gradients.get('a.bias')!],
    ])
    expect(() => optimizer.step(misshaped)).toThrow(/misshaped gradients a.weight \(gradient \[2\], parameter \[3, 2\]\)/)
    expect(() => optimizer.step(gradients, { learningRate: Number.NaN })).toThrow(/'options\.learningRate'/)
    expect(optimizer.stepCount).toBe(0)
    optimizer.dispose()
    expect(() => optimizer.step(gradients)).toThrow(/disposed/)
    tf.dispose([...parameters.values(), ...gradients.values()])
  })
})
