import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { parseCommandLineOptions } from './command-line.js'

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
