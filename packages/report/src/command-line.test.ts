import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { applyConfigOverrides, parseCommandLineOptions } from './command-line.js'

describe('parseCommandLineOptions', () => {
  it('turns --kebab-case value pairs into camelCase options with numbers and booleans converted', () => {
    expect(
      parseCommandLineOptions(['--steps', '10', '--learning-rate', '5e-4', '--kl-coefficient', '-0.5', '--progress', 'false', '--run-directory', 'runs/x']),
    ).toEqual({
      steps: 10,
      learningRate: 5e-4,
      klCoefficient: -0.5,
      progress: false,
      runDirectory: 'runs/x',
    })
  })

  it('rejects a value without a flag and a flag without a value, naming it', () => {
    expect(() => parseCommandLineOptions(['steps', '10'])).toThrow(InvalidArgumentError)
    expect(() => parseCommandLineOptions(['--steps'])).toThrow(/--steps.*has no value/)
    expect(() => parseCommandLineOptions(['--', '1'])).toThrow(InvalidArgumentError)
  })
})

describe('applyConfigOverrides', () => {
  it('sets fields by path with YAML values, making missing objects and arrays, without changing the input', () => {
    const config = { steps: 100, batch: { episodesPerStep: 128 }, environments: [{ game: 'kuhn-poker-v1' }] }
    const changed = applyConfigOverrides(config, [
      'steps=2',
      'batch.episodesPerStep=4',
      'environments.0.options.rounds=1',
      'evaluation.opponents=[random, nash]',
      'runDirectory=runs/a=b',
      'resume=true',
    ])
    expect(changed).toEqual({
      steps: 2,
      batch: { episodesPerStep: 4 },
      environments: [{ game: 'kuhn-poker-v1', options: { rounds: 1 } }],
      evaluation: { opponents: ['random', 'nash'] },
      runDirectory: 'runs/a=b',
      resume: true,
    })
    expect(config.steps).toBe(100)
    expect(applyConfigOverrides(undefined, ['list.0=x'])).toEqual({ list: ['x'] })
  })

  it('rejects an entry without a path or through a value that is not an object, naming it', () => {
    expect(() => applyConfigOverrides({}, ['steps'])).toThrow(/overrides\[0\].*path=value/)
    expect(() => applyConfigOverrides({}, ['=1'])).toThrow(InvalidArgumentError)
    expect(() => applyConfigOverrides({}, ['a..b=1'])).toThrow(InvalidArgumentError)
    expect(() => applyConfigOverrides({ steps: 1 }, ['steps.x=1'])).toThrow(/cannot set steps.x/)
    expect(() => applyConfigOverrides({}, ['__proto__.polluted=1'])).toThrow(InvalidArgumentError)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('bounds an index into an array by its length (one past appends): environments.4294967294 grew memory ~100 MB/s', () => {
    const config = { environments: [{ game: 'kuhn-poker-v1' }] }
    expect(applyConfigOverrides(config, ['environments.1.game=tic-tac-toe-v1'])).toEqual({
      environments: [{ game: 'kuhn-poker-v1' }, { game: 'tic-tac-toe-v1' }],
    })
    const refusal = (override: string) => {
      try {
        applyConfigOverrides(config, [override])
      } catch (error) {
        expect(InvalidArgumentError.isInstance(error)).toBe(true)
        expect((error as InvalidArgumentError).argument).toBe('overrides[0]')
        expect((error as InvalidArgumentError).value).toBe(override)
        return (error as Error).message
      }
      throw new Error(`${override} was accepted`)
    }
    expect(refusal('environments.4294967294.game=x')).toMatch(/cannot set environments\.4294967294: environments has 1 item, so its index is at most 1/)
    expect(refusal('environments.2=x')).toMatch(/index is at most 1/)
    expect(refusal('environments.length=4294967295')).toMatch(/cannot set environments\.length: environments is a list, indexed by 0, 1, 2/)
    expect(refusal('environments.01.game=x')).toMatch(/is a list/)
    expect(refusal('environments.-1.game=x')).toMatch(/is a list/)
    expect(refusal('list.3=x')).toMatch(/cannot set list\.3: list has 0 items, so its index is at most 0/) // a new list starts at 0
    expect(applyConfigOverrides({}, ['list.0.0=x', 'list.0.1=y'])).toEqual({ list: [['x', 'y']] })
  })

  it('refuses prototype keys anywhere in the path, and keeps a __proto__ key of a value as plain data', () => {
    for (const override of ['a.__proto__.polluted=1', 'constructor.prototype.polluted=1', 'environments.0.constructor=1', 'a.prototype=1'])
      expect(() => applyConfigOverrides({ environments: [{}] }, [override])).toThrow(/cannot set/)
    const changed = applyConfigOverrides({}, ['a={__proto__: {polluted: 1}}']) as { a: Record<string, unknown> }
    expect(Object.getPrototypeOf(changed.a)).toBe(Object.prototype)
    expect(changed.a.polluted).toBeUndefined()
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('refuses a value that is not YAML, expands aliases past 100, or nests past 64, and a config nested past 64', () => {
    expect(() => applyConfigOverrides({}, ['a=[1, 2'])).toThrow(/overrides\[0\].*has a value that is not YAML/)
    const laughs = `[${Array.from({ length: 5 }, (_, level) => `&l${level} [${Array.from({ length: 10 }, () => (level === 0 ? 'x' : `*l${level - 1}`)).join(',')}]`).join(',')}]`
    expect(() => applyConfigOverrides({}, [`a=${laughs}`])).toThrow(/not YAML \(Excessive alias count/)
    expect(() => applyConfigOverrides({}, [`a=${'['.repeat(65)}${']'.repeat(65)}`])).toThrow(/nested more than 64/)
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) as unknown
    expect(() => applyConfigOverrides({ deep }, ['steps=1'])).toThrow(/'config'.*nested more than 64/) // was: Maximum call stack size exceeded
  })

  it('rejects a value that is not YAML with an InvalidArgumentError naming the entry, not the YAML library error', () => {
    const error = (() => {
      try {
        applyConfigOverrides({}, ['steps=2', 'evaluation.opponents=[random, nash'])
      } catch (caught) {
        return caught
      }
    })()
    expect(InvalidArgumentError.isInstance(error)).toBe(true)
    expect((error as InvalidArgumentError).argument).toBe('overrides[1]')
    expect((error as Error).message).toContain('evaluation.opponents=[random, nash')
    expect((error as Error).message).toContain('not YAML')
  })
})
