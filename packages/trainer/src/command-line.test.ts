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
