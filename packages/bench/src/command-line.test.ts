import { InvalidArgumentError, ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { benchSuites, runBenchSuite } from './bench-suites.js'
import { benchOptionsFromArguments } from './command-line.js'

describe('benchOptionsFromArguments', () => {
  it('reads flags by the suite schema: bare booleans, comma lists, numbers, camelCase names', () => {
    const options = benchOptionsFromArguments('train-step', [
      '--quick',
      '--presets',
      'tiny,small',
      '--peer-threads',
      '2,1',
      '--repetitions',
      '3',
      '--backends',
      'wasm',
    ])
    expect(options).toEqual({ quick: true, presets: ['tiny', 'small'], peerThreads: [2, 1], repetitions: 3, backends: ['wasm'] })
    expect(benchSuites['train-step']!.optionsSchema.safeParse(options).success).toBe(true)
    expect(benchOptionsFromArguments('transfer', ['--train-on', 'kuhn-poker-v1+tictactoe-v0,pig-dice-v0', '--steps', '2'])).toEqual({
      trainOn: [['kuhn-poker-v1', 'tictactoe-v0'], ['pig-dice-v0']],
      steps: 2,
    })
    expect(benchOptionsFromArguments('tokenizer', ['--quick', 'false', '--tokenizers', 'qwen3'])).toEqual({ quick: false, tokenizers: ['qwen3'] })
  })

  it('leaves what the schema does not expect for runBenchSuite to name, and refuses malformed words', async () => {
    const options = benchOptionsFromArguments('kernels', ['--quik', 'yes'])
    expect(options).toEqual({ quik: 'yes' })
    await expect(runBenchSuite('kernels', options)).rejects.toSatisfy(ParseError.isInstance)
    expect(() => benchOptionsFromArguments('kernels', ['quick'])).toThrow(/expected --name/)
    expect(() => benchOptionsFromArguments('kernels', ['--wasm-threads'])).toThrow(/has no value/)
    expect(() => benchOptionsFromArguments('chess', [])).toThrow(InvalidArgumentError)
  })
})
