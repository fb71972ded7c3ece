import * as tf from '@tensorflow/tfjs-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { initTensors } from '../backend/init-tensors.js'
import {
  EngineInternalsError,
  checkEngineInternals,
  constantOf,
  gradientPaths,
  gradientsOf,
  offTape,
  simulateTfjsCoreVersion,
  supportedTfjsCoreVersion,
  tapeGradients,
} from './engine-internals.js'

beforeAll(async () => {
  await initTensors({ backend: 'cpu', verbose: false })
})

/** A copy of the real engine with `change` applied to it (its state a copy too), for `checkEngineInternals({ engine })`. */
function alteredEngine(change: (engine: Record<string, unknown>, state: Record<string, unknown>) => void): unknown {
  const real = tf.engine() as unknown as Record<string, unknown>
  const state = Object.assign(Object.create(Object.getPrototypeOf(real.state)), real.state) as Record<string, unknown>
  const engine = Object.assign(Object.create(Object.getPrototypeOf(real)), real, { state }) as Record<string, unknown>
  change(engine, state)
  return engine
}

describe('checkEngineInternals', () => {
  it('passes on the installed tfjs-core, the version the internals were written for', () => {
    expect(tf.version_core).toBe(supportedTfjsCoreVersion)
    expect(() => checkEngineInternals()).not.toThrow()
    const before = tf.memory().numTensors
    expect(() => checkEngineInternals({ engine: tf.engine() })).not.toThrow() // the probe itself, run again: it frees what it records
    expect(tf.memory().numTensors).toBe(before)
  })

  it('throws EngineInternalsError naming the version found and the one expected on another tfjs-core', () => {
    const error = (() => {
      try {
        checkEngineInternals({ version: '4.23.0' })
      } catch (caught) {
        return caught
      }
      return undefined
    })()
    expect(EngineInternalsError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ name: 'EngineInternalsError', foundVersion: '4.23.0', expectedVersion: supportedTfjsCoreVersion })
    expect((error as Error).message).toMatch(/tfjs-core 4\.23\.0 found, 4\.22\.0 expected/)
  })

  it('throws EngineInternalsError when the engine lacks what the tape walk touches', () => {
    const cases: [string, (engine: Record<string, unknown>, state: Record<string, unknown>) => void, RegExp][] = [
      ['no startTape', (engine) => void (engine.startTape = undefined), /no startTape\(\) method/],
      ['no gradientDepth', (_engine, state) => void (state.gradientDepth = undefined), /engine\.state\.gradientDepth is undefined/],
      ['no kernelDepth', (_engine, state) => void (state.kernelDepth = '0'), /engine\.state\.kernelDepth is string/],
      // A startTape that records nowhere: the tape stays what it was (here, no array).
      ['a tape elsewhere', (engine) => void (engine.startTape = () => {}), /activeTape is not an array|recording an operation/],
    ]
    for (const [label, change, message] of cases) {
      expect(() => checkEngineInternals({ engine: alteredEngine(change) }), label).toThrow(EngineInternalsError)
      expect(() => checkEngineInternals({ engine: alteredEngine(change) }), label).toThrow(message)
    }
  })
})

describe('tapeGradients', () => {
  it('takes the tape path (the fast one, freeing as it goes) and matches tf.variableGrads', () => {
    const weight = tf.variable(tf.tensor1d([1, -2, 3]), true, 'engine-internals-test/weight')
    const loss = () => tf.sum(tf.square(tf.mul(weight, 2))) as tf.Scalar
    const before = gradientPaths()
    const { value, grads } = tapeGradients(loss, [weight])
    const after = gradientPaths()
    expect(after.tape - before.tape).toBe(1)
    expect(after.nested - before.nested).toBe(0)
    const reference = tf.variableGrads(loss, [weight])
    expect(value.dataSync()[0]).toBeCloseTo(reference.value.dataSync()[0]!, 5)
    expect(Array.from(grads[0]!.dataSync())).toEqual(Array.from(reference.grads[weight.name]!.dataSync()))
    tf.dispose([value, ...grads.filter((gradient) => gradient !== undefined), reference.value, ...Object.values(reference.grads), weight])
  })

  it('throws EngineInternalsError on another tfjs-core instead of falling back to tf.variableGrads', () => {
    const weight = tf.variable(tf.tensor1d([1, 2]), true, 'engine-internals-test/mismatch')
    const before = gradientPaths()
    simulateTfjsCoreVersion('4.21.0')
    try {
      for (const call of [
        () => tapeGradients(() => tf.sum(weight) as tf.Scalar, [weight]),
        () => gradientsOf(() => tf.sum(weight), [weight], tf.scalar(1)),
        () => offTape(() => 0, weight),
        () => constantOf(() => tf.zerosLike(weight), weight),
      ]) {
        expect(call).toThrow(EngineInternalsError)
        expect(call).toThrow(/4\.21\.0 found, 4\.22\.0 expected/)
      }
    } finally {
      simulateTfjsCoreVersion(undefined)
    }
    expect(gradientPaths()).toEqual(before) // neither path ran
    const { value, grads } = tapeGradients(() => tf.sum(weight) as tf.Scalar, [weight]) // the real version again
    expect(Array.from(grads[0]!.dataSync())).toEqual([1, 1])
    tf.dispose([value, grads[0]!, weight])
  })

  it("takes tfjs's own gradients only inside another gradient's recording (a higher-order gradient)", () => {
    const x = tf.scalar(3)
    const before = gradientPaths()
    // d/dx of (d/dx x³) = 6x, with the inner gradient computed while the outer tape records.
    const second = tf.grad((input: tf.Tensor) => gradientsOf(() => tf.pow(input, 3), [input], tf.scalar(1)).grads[0]!)(x)
    const after = gradientPaths()
    expect(second.dataSync()[0]).toBeCloseTo(18, 4)
    expect(after.nested - before.nested).toBe(1)
    expect(after.tape - before.tape).toBe(0)
    tf.dispose([x, second])
  })
})

describe('offTape and constantOf', () => {
  it('run untaped: their ops are not differentiated, and a gradient through them is zero', () => {
    const x = tf.variable(tf.tensor1d([1, 2]), true, 'engine-internals-test/x')
    const { value, grads } = tapeGradients(() => {
      const constant = constantOf(() => tf.cast(tf.greater(x, 1.5), 'float32'), x) // a comparison has no gradient: on the tape it would throw
      const metric = offTape(() => tf.keep(tf.max(x)), x)
      metric.dispose()
      return tf.sum(tf.mul(x, constant)) as tf.Scalar
    }, [x])
    expect(value.dataSync()[0]).toBe(2)
    expect(Array.from(grads[0]!.dataSync())).toEqual([0, 1])
    tf.dispose([value, ...grads.filter((gradient) => gradient !== undefined), x])
  })
})
