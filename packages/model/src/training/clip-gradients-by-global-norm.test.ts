import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InvalidArgumentError } from '@ludic/core'
import { initTensors } from '@ludic/tensors'
import { expectNoLeaks } from '@ludic/tensors/test'
import { clipGradientsByGlobalNorm } from './clip-gradients-by-global-norm.js'
import { NonFiniteGradientError } from './non-finite-gradient-error.js'
import { AgreementTracker, loadOptimizerReferences, tensorsOf } from '../test/optimizer-references.js'

beforeAll(async () => {
  await initTensors({ backend: 'wasm', verbose: false })
})

const references = loadOptimizerReferences()
const agreement = new AgreementTracker()

afterAll(() => {
  console.info(`clip_grad_norm_ vs torch ${references.torch} (${tf.getBackend()}): ${agreement.summary()}`)
})

describe('clipGradientsByGlobalNorm', () => {
  for (const reference of references.clipping) {
    it(`matches torch.nn.utils.clip_grad_norm_: ${reference.id}`, () => {
      const gradients = tensorsOf(reference.gradients, reference.shapes)
      const { gradients: clipped, norm, coefficient } = clipGradientsByGlobalNorm(gradients, reference.maxNorm)
      agreement.compare([norm], [reference.norm], `${reference.id} norm`, 2)
      expect(coefficient).toBe(Math.min(1, Math.fround(Math.fround(1 / Math.fround(norm + Math.fround(1e-6))) * Math.fround(reference.maxNorm))))
      expect([...clipped.keys()]).toEqual(Object.keys(reference.shapes))
      for (const [name, gradient] of clipped) {
        expect(gradient.shape).toEqual(reference.shapes[name])
        agreement.compare(gradient.dataSync(), reference.clipped[name]!, `${reference.id} ${name}`, 3)
      }
      if (coefficient === 1) {
        for (const [name, gradient] of clipped) expect(gradient.dataSync()).toEqual(gradients.get(name)!.dataSync())
      }
      tf.dispose([...gradients.values(), ...clipped.values()])
    })
  }

  it('throws NonFiniteGradientError naming the parameters with NaN or infinite gradients, and allocates nothing', () => {
    const gradients = new Map<string, tf.Tensor>([
      ['a.weight', tf.tensor([1, 2, 3])],
      ['b.weight', tf.tensor([1, Number.NaN])],
      ['c.bias', tf.tensor([Number.NEGATIVE_INFINITY, 0])],
      ['d.bias', tf.tensor([0, 0])],
    ])
    const before = tf.memory().numTensors
    let caught: unknown
    try {
      clipGradientsByGlobalNorm(gradients, 1)
    } catch (error) {
      caught = error
    }
    expect(NonFiniteGradientError.isInstance(caught)).toBe(true)
    const error = caught as NonFiniteGradientError
    expect(error.parameters).toEqual(['b.weight', 'c.bias'])
    expect(Number.isNaN(error.norm)).toBe(true)
    expect(error.message).toMatch(/non-finite gradients in 2 parameter\(s\): b\.weight, c\.bias/)
    expect(tf.memory().numTensors).toBe(before)
    tf.dispose([...gradients.values()])
  })

  it('gives a finite norm where the float32 sum of squares overflows but every gradient is finite (as torch)', () => {
    const gradients = new Map([
      ['big', tf.tensor([3e20, -4e20])],
      ['small', tf.tensor([1, 1])],
    ])
    const { gradients: clipped, norm } = clipGradientsByGlobalNorm(gradients, 1)
    expect(norm).toBe(Math.fround(5e20))
    const values = clipped.get('big')!.dataSync()
    expect(values[0]).toBeCloseTo(0.6, 6)
    expect(values[1]).toBeCloseTo(-0.8, 6)
    tf.dispose([...gradients.values(), ...clipped.values()])
  })

  it('does not leak, handles an empty map, names bad arguments', async () => {
    const gradients = new Map([['w', tf.tensor([[3, 4]])]])
    await expectNoLeaks(() => [...clipGradientsByGlobalNorm(gradients, 1).gradients.values()], { label: 'clipGradientsByGlobalNorm' })
    expect(clipGradientsByGlobalNorm(new Map(), 1)).toEqual({ gradients: new Map(), norm: 0, coefficient: 1 })
    expect(() => clipGradientsByGlobalNorm(gradients, 0)).toThrow(InvalidArgumentError)
    expect(() => clipGradientsByGlobalNorm(gradients, Number.POSITIVE_INFINITY)).toThrow(/'maxNorm' \(value: Infinity\)/)
    expect(() => clipGradientsByGlobalNorm({ w: gradients.get('w') } as never, 1)).toThrow(/'gradients'.*must be a Map/)
    expect(() => clipGradientsByGlobalNorm(new Map([['ids', tf.tensor([1], [1], 'int32')]]), 1)).toThrow(/'gradients\["ids"\]' \(value: "int32"\)/)
    tf.dispose([...gradients.values()])
  })
})
