import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ParseError } from './errors.js'
import { closestName, parseArgument, parseInput } from './validation.js'

describe('parseInput', () => {
  const schema = z.object({ hidden_size: z.number().int(), layers: z.array(z.object({ heads: z.number().positive() })) })

  it('returns the parsed value', () => {
    expect(parseInput(schema, { hidden_size: 8, layers: [{ heads: 2 }] }, { source: 'config.json' })).toEqual({ hidden_size: 8, layers: [{ heads: 2 }] })
  })

  it('throws a ParseError at the first failing field that names every failing field', () => {
    const input = { hidden_size: 'eight', layers: [{ heads: 2 }, { heads: -1 }] }
    const error = (() => {
      try {
        parseInput(schema, input, { source: 'config.json' })
      } catch (thrown) {
        return thrown
      }
      return undefined
    })()
    expect(ParseError.isInstance(error)).toBe(true)
    const parseError = error as ParseError
    expect(parseError.source).toBe('config.json')
    expect(parseError.path).toEqual(['hidden_size'])
    expect(parseError.message).toBe(
      'Cannot parse config.json at hidden_size: Invalid input: expected number, received string; also at layers[1].heads: Too small: expected number to be >0',
    )
    expect(parseError.cause).toBeInstanceOf(z.ZodError)
  })

  it('puts the location of the value inside its source before the field path', () => {
    expect(() => parseInput(z.object({ type: z.literal('BPE') }), { type: 'WordPiece' }, { source: 'tokenizer.json', path: ['model'] })).toThrow(
      /^Cannot parse tokenizer\.json at model\.type: /,
    )
    expect(() => parseInput(z.string(), 3, { source: 'the prompt function' })).toThrow(/^Cannot parse the prompt function: /)
  })

  it('lists at most a few further failing fields', () => {
    const many = z.array(z.number())
    try {
      parseInput(
        many,
        Array.from({ length: 12 }, () => 'x'),
        { source: 'list.json' },
      )
      expect.unreachable()
    } catch (error) {
      expect((error as ParseError).path).toEqual([0])
      expect((error as ParseError).message).toMatch(/at \[8\]: .*; 3 more$/)
    }
  })
})

describe('unknown keys', () => {
  const options = z.strictObject({ steps: z.number(), batch: z.strictObject({ episodesPerStep: z.number().default(8) }).optional() })

  it('name the closest known key of a misspelled one, in parseInput and parseArgument', () => {
    expect(() => parseInput(options, { stepz: 1, steps: 2 }, { source: 'run.yaml' })).toThrow('Unrecognized key: "stepz" (did you mean "steps"?)')
    expect(() => parseArgument(options, { steps: 2, batch: { episodsPerStep: 4 } }, 'options')).toThrow(
      'Unrecognized key: "episodsPerStep" (did you mean "episodesPerStep"?)',
    )
    expect(() => parseInput(options, { steps: 2, surprise: 1, bach: {} }, { source: 'run.yaml' })).toThrow(
      'Unrecognized keys: "surprise", "bach" (did you mean "batch"?)',
    )
  })

  it('closestName: a misspelling within a third of the letters (case ignored, a swap counts one), else none', () => {
    expect(closestName('stepz', ['seed', 'steps'])).toBe('steps')
    expect(closestName('lerningRate', ['learningRate', 'warmUp'])).toBe('learningRate')
    expect(closestName('GAMES', ['games'])).toBe('games')
    expect(closestName('ppoepcohs', ['ppoEpochs'])).toBe('ppoEpochs')
    expect(closestName('surprise', ['steps', 'seed', 'batch'])).toBeUndefined()
    expect(closestName('a', [])).toBeUndefined()
  })
})
