import { InvalidArgumentError, ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { benchSuiteNames, benchSuites, runBenchSuite } from './bench-suites.js'

describe('benchSuites', () => {
  it('holds the speed and evaluation suites, each with a description and an options schema whose defaults parse', () => {
    expect(benchSuiteNames).toEqual([
      'kernels',
      'tokenizer',
      'train-step',
      'decode',
      'collection',
      'engine',
      'scale',
      'disaggregated',
      'games',
      'kuhn',
      'transfer',
    ])
    for (const name of benchSuiteNames) {
      const suite = benchSuites[name]!
      expect(suite.name).toBe(name)
      expect(suite.description.length).toBeGreaterThan(20)
      expect(suite.optionsSchema.safeParse({}).success).toBe(true)
    }
  })

  it('refuses an unknown suite with an InvalidArgumentError listing the names', async () => {
    const error = await runBenchSuite('nope', {}).catch((caught: unknown) => caught)
    expect(InvalidArgumentError.isInstance(error)).toBe(true)
    for (const name of benchSuiteNames) expect((error as Error).message).toContain(name)
    await expect(runBenchSuite('toString', {})).rejects.toSatisfy(InvalidArgumentError.isInstance)
  })

  it('parses the options with the suite schema: every wrong field is named, unknown fields too', async () => {
    const error = await runBenchSuite('train-step', { presets: ['huge'], quick: 'yes', typo: 1 }).catch((caught: unknown) => caught)
    expect(ParseError.isInstance(error)).toBe(true)
    const message = (error as Error).message
    expect(message).toContain("bench suite 'train-step'")
    expect(message).toContain('presets[0]')
    expect(message).toMatch(/quick/)
    expect(message).toMatch(/typo/)
  })

  it('stops before running when the signal is already aborted', async () => {
    await expect(runBenchSuite('kuhn', {}, { signal: AbortSignal.abort() })).rejects.toThrow()
  })
})
