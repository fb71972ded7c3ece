import { InvalidArgumentError, ParseError, parseInput } from '@ludic/core'
import { HubError } from '@ludic/hub'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { CliError, ConfigError, exitCodeOf, exitCodes, formatError, formatIssues } from './errors.js'

describe('exitCodeOf', () => {
  it('maps each failure to its documented exit code', () => {
    const missing = Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' })
    expect(exitCodeOf(new ParseError({ source: 'a.yaml', message: 'cannot read', cause: missing }))).toBe(exitCodes.notFound)
    // Input that exists but cannot be read as what it should be (a model's config.json, a checkpoint, a data file): 3.
    expect(exitCodeOf(new ParseError({ source: 'model/config.json', message: 'not valid JSON' }))).toBe(exitCodes.notFound)
    // What the user wrote (a config file, flags), wrapped by the command in a ConfigError: 2 ...
    const own = new ParseError({ source: 'run.yaml', path: ['steps'], message: 'must be positive' })
    expect(exitCodeOf(new ConfigError(own, {}))).toBe(exitCodes.usage)
    expect(
      exitCodeOf(
        new ConfigError(
          new ParseError({ source: 'run.yaml', path: ['model'], message: 'x', cause: new InvalidArgumentError({ argument: 'a', value: 1, message: 'b' }) }),
          {},
        ),
      ),
    ).toBe(exitCodes.usage)
    // ... unless what a field names is missing or unreadable: 3, as the same path on the command line.
    const missingModel = new CliError('no such directory: ./no-such-model', exitCodes.notFound)
    expect(exitCodeOf(new ConfigError(new ParseError({ source: 'run.yaml', path: ['model', 'path'], message: 'x', cause: missingModel }), {}))).toBe(
      exitCodes.notFound,
    )
    const brokenModel = new ParseError({ source: 'model/config.json', message: 'not valid JSON' })
    expect(exitCodeOf(new ConfigError(new ParseError({ source: 'run.yaml', path: ['model'], message: 'x', cause: brokenModel }), {}))).toBe(exitCodes.notFound)
    expect(exitCodeOf(Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' }))).toBe(exitCodes.notFound)
    expect(exitCodeOf(new InvalidArgumentError({ argument: 'x', value: 1, message: 'bad' }))).toBe(exitCodes.usage)
    expect(exitCodeOf(new HubError({ reason: 'missing', repoId: 'a/b', message: 'not found' }))).toBe(exitCodes.notFound)
    expect(exitCodeOf(new HubError({ reason: 'network', repoId: 'a/b', message: 'unreachable' }))).toBe(exitCodes.network)
    expect(exitCodeOf(new Error('wrapped', { cause: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }) }))).toBe(exitCodes.network)
    expect(exitCodeOf(Object.assign(new Error('aborted'), { name: 'AbortError' }))).toBe(exitCodes.interrupted)
    expect(exitCodeOf(new CliError('stop', exitCodes.interrupted))).toBe(exitCodes.interrupted)
    expect(exitCodeOf(new Error('out of memory'))).toBe(exitCodes.failed)
  })
})

describe('formatError', () => {
  const schema = z.strictObject({
    model: z.union([z.strictObject({ preset: z.enum(['tiny', 'small']) }), z.strictObject({ path: z.string() })]),
    steps: z.number().int().positive(),
  })

  it('lists every wrong field of a config: the closest branch of a union, the given value and the allowed ones', () => {
    const input = { model: { preset: 'huge' }, steps: 0, extra: true }
    const error = (() => {
      try {
        parseInput(schema, input, { source: 'run.yaml' })
      } catch (caught) {
        return caught as ParseError
      }
    })()!
    expect(formatError(new ConfigError(error, input))).toBe(
      [
        'invalid run.yaml: 3 wrong fields',
        '  model.preset: not an allowed value (got "huge") (allowed: tiny | small)',
        '  steps: Too small: expected number to be >0',
        '  extra: unknown field',
      ].join('\n'),
    )
    expect(new ConfigError(error, input).exitCode).toBe(exitCodes.usage)
    expect(formatIssues({ issues: [] })).toEqual([])
  })

  it('prints other errors with their cause', () => {
    expect(formatError(new Error('the run failed', { cause: new Error('NaN loss') }))).toBe('the run failed\n  cause: NaN loss')
    expect(formatError('plain')).toBe('plain')
  })
})
