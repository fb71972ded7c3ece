import { InvalidArgumentError, type AdvantageEstimatorV1 } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createGrpo } from './grpo.js'
import { advantageEstimators, registerAdvantageEstimator } from './registry.js'

const builtInNames = [
  'gae',
  'grpo',
  'dr-grpo',
  'rloo',
  'reinforce++',
  'reinforce++-baseline',
  'remax',
  'opo',
  'grpo-passk',
  'gpg',
  'rae',
  'gigpo',
  'turn-reinforce',
]

describe('advantageEstimators', () => {
  it('knows the built-in estimators, each named as registered', () => {
    expect(advantageEstimators.names()).toEqual(builtInNames)
    for (const name of builtInNames) expect(advantageEstimators.create(name).name).toBe(name)
  })

  it('passes options to the factory, which checks them', () => {
    const batch = { tokenRewards: [Float32Array.of(1), Float32Array.of(0)], groupIds: ['a', 'a'] }
    expect(advantageEstimators.create('grpo', { epsilon: 0.5 }).estimate(batch)).toEqual(createGrpo({ epsilon: 0.5 }).estimate(batch))
    expect(() => advantageEstimators.create('grpo', { epsilon: -1 })).toThrow(/'options\.epsilon'/)
    expect(() => advantageEstimators.create('rloo', { gamma: 1 } as never)).toThrow(InvalidArgumentError)
  })

  it('lists the known names when asked for an unknown one', () => {
    expect(() => advantageEstimators.create('ppo')).toThrow(InvalidArgumentError)
    expect(() => advantageEstimators.create('ppo')).toThrow(/'name' \(value: "ppo"\): unknown advantage estimator; known: gae, grpo, dr-grpo, rloo/)
  })

  it('registers custom estimators under new names only', () => {
    const constant = (options?: { value?: number }): AdvantageEstimatorV1 => ({
      specificationVersion: 'v1',
      name: 'constant',
      estimate: (batch) => {
        const advantages = batch.tokenRewards.map((rewards) => new Float32Array(rewards.length).fill(options?.value ?? 1))
        return { advantages, returns: advantages }
      },
    })
    registerAdvantageEstimator('constant', constant)
    expect(advantageEstimators.names().at(-1)).toBe('constant')
    const { advantages } = advantageEstimators.create('constant', { value: 3 }).estimate({ tokenRewards: [new Float32Array(2)], groupIds: ['a'] })
    expect([...advantages[0]!]).toEqual([3, 3])
    expect(() => registerAdvantageEstimator('constant', constant)).toThrow(/'name' \(value: "constant"\).*already registered/)
    expect(() => registerAdvantageEstimator('grpo', constant)).toThrow(InvalidArgumentError)
    expect(() => registerAdvantageEstimator('', constant)).toThrow(InvalidArgumentError)
    expect(() => registerAdvantageEstimator('broken', 'not a function' as never)).toThrow(/'factory'/)
  })
})
