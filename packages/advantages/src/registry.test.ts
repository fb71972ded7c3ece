// isolated-test: it registers estimators ('constant') in the module-wide registry; in a worker shared with other files,
// batch.test.ts, which checks every registered name's batch validation, would then meet them (a CI run did).
import { advantageNeedSchema, InvalidArgumentError, type AdvantageBatch, type AdvantageEstimatorV1, type AdvantageNeed } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { withExplorationAdvantage } from './exploration-advantage.js'
import { createGigpo } from './gigpo.js'
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

/** Two groups of two one-turn episodes: rewards and groups, and every field an estimator may need, apart. */
const rewardsAndGroups: AdvantageBatch = {
  tokenRewards: [Float32Array.of(0, 1), Float32Array.of(0, 0), Float32Array.of(0.5), Float32Array.of(0, 0, -1)],
  groupIds: ['g', 'g', 'h', 'h'],
}
const needs: { readonly [Need in AdvantageNeed]: NonNullable<AdvantageBatch[Need]> } = {
  values: rewardsAndGroups.tokenRewards.map((rewards) => new Float32Array(rewards.length).fill(0.25)),
  baselineRewards: [0.5, 0.5, 0, 0],
  stateKeys: ['s0', 's0', 's0', 's1'],
  roles: ['player0', 'player1', 'player0', 'player1'],
  environmentIds: ['kuhn-poker-v1', 'kuhn-poker-v1', 'tictactoe-v0', 'tictactoe-v0'],
  opponentIds: ['learner', 'learner', 'random', 'minimax'],
}

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

// After the registry's own tests, which expect the built-in names alone (the registry is one per module).
describe('AdvantageEstimatorV1.requires', () => {
  it("lists exactly what each registered estimator's estimate demands: without one it throws naming the field, with them it runs", () => {
    expect(Object.keys(needs).sort()).toEqual([...advantageNeedSchema.options].sort())
    for (const name of advantageEstimators.names()) {
      const estimator = advantageEstimators.create(name)
      const requires = estimator.requires ?? []
      for (const need of requires) expect(advantageNeedSchema.options, `${name} requires ${need}`).toContain(need)
      const given = { ...rewardsAndGroups, ...Object.fromEntries(requires.map((need) => [need, needs[need]])) }
      // Runs with the declared needs alone: an undeclared need would throw here.
      const { advantages } = estimator.estimate(given)
      expect(advantages.flatMap((row) => [...row]).every(Number.isFinite), name).toBe(true)
      for (const need of requires) {
        const { [need]: _, ...without } = given
        expect(() => estimator.estimate(without), `${name} without ${need}`).toThrow(InvalidArgumentError)
        expect(() => estimator.estimate(without), `${name} without ${need}`).toThrow(`'batch.${need}'`)
      }
    }
  })

  it('declares GAE, ReMax, RAE and GiGPO; GiGPO with its own stateKey function needs no keys; the exploration wrapper passes them on', () => {
    const declared = Object.fromEntries(advantageEstimators.names().map((name) => [name, advantageEstimators.create(name).requires ?? []]))
    expect(declared).toMatchObject({ gae: ['values'], remax: ['baselineRewards'], rae: ['roles', 'environmentIds'], gigpo: ['stateKeys'], grpo: [] })
    const ownKeys = createGigpo({ stateKey: (_, sample) => `turn ${sample}` })
    expect(ownKeys.requires).toEqual([])
    expect(() => ownKeys.estimate(rewardsAndGroups)).not.toThrow()
    expect(withExplorationAdvantage(advantageEstimators.create('gae')).requires).toEqual(['values'])
  })

  it('refuses a registered estimator whose requires names no batch field', () => {
    const declaring = (requires: unknown) => (): AdvantageEstimatorV1 => ({ ...createGrpo(), requires: requires as AdvantageNeed[] })
    registerAdvantageEstimator('needs-a-critic', declaring(['values']))
    expect(advantageEstimators.create('needs-a-critic').requires).toEqual(['values'])
    registerAdvantageEstimator('needs-nonsense', declaring(['values', 'critics']))
    expect(() => advantageEstimators.create('needs-nonsense')).toThrow(/'name' \(value: "needs-nonsense"\).*requires \["values","critics"\]/)
    registerAdvantageEstimator('needs-a-string', declaring('values'))
    expect(() => advantageEstimators.create('needs-a-string')).toThrow(InvalidArgumentError)
  })
})
