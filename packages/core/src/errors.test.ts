import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { BackendError, FileSystemError, InvalidArgumentError, LudicError, ParseError, ShapeError, describeValue, formatPath } from './errors.js'
import { parseArgument } from './validation.js'

describe('errors', () => {
  it('InvalidArgumentError names the argument and the value', () => {
    const error = new InvalidArgumentError({ argument: 'temperature', value: -1, message: 'must be >= 0' })
    expect(error.message).toBe("Invalid argument 'temperature' (value: -1): must be >= 0")
    expect(error.argument).toBe('temperature')
    expect(error.value).toBe(-1)
    expect(error.name).toBe('InvalidArgumentError')
    expect(error).toBeInstanceOf(Error)
  })

  it('isInstance works by marker, including across copies of the package', () => {
    const parse = new ParseError({ source: 'model.safetensors', path: ['weight', 'dtype'], message: 'unknown dtype "Q4"' })
    expect(LudicError.isInstance(parse)).toBe(true)
    expect(ParseError.isInstance(parse)).toBe(true)
    expect(InvalidArgumentError.isInstance(parse)).toBe(false)
    expect(LudicError.isInstance(new Error('x'))).toBe(false)
    expect(LudicError.isInstance(null)).toBe(false)
    expect(LudicError.isInstance('LudicError')).toBe(false)
    // A look-alike made by another copy of the package carries the same Symbol.for marker.
    const foreign = Object.assign(new Error('x'), { [Symbol.for('ludic.error')]: true, [Symbol.for('ludic.error.ParseError')]: true })
    expect(LudicError.isInstance(foreign)).toBe(true)
    expect(ParseError.isInstance(foreign)).toBe(true)
  })

  it('ParseError formats its path', () => {
    const error = new ParseError({ source: 'tokenizer.json', path: ['model', 'merges', 3], message: 'expected a pair' })
    expect(error.message).toBe('Cannot parse tokenizer.json at model.merges[3]: expected a pair')
    expect(formatPath(['weight_map', 'model.layers.0.weight'])).toBe('weight_map["model.layers.0.weight"]')
    expect(formatPath([])).toBe('(root)')
  })

  it('ShapeError and BackendError carry typed fields and keep the cause', () => {
    const shape = new ShapeError({ argument: 'logits', expected: [2, -1, 8], actual: [2, 3] })
    expect(shape.message).toBe("Shape of 'logits' is [2, 3], expected [2, *, 8]")
    expect(shape.expected).toEqual([2, -1, 8])
    const cause = new Error('dlopen failed')
    const backend = new BackendError({ backend: 'tensorflow', message: 'failed to load', cause })
    expect(backend.cause).toBe(cause)
    expect(BackendError.isInstance(backend)).toBe(true)
    expect(ShapeError.isInstance(backend)).toBe(false)
  })

  it('describeValue is short and never throws', () => {
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    expect(describeValue(cyclic)).toBe('[object Object]')
    expect(describeValue('a'.repeat(200)).length).toBe(80)
    expect(describeValue(new Float32Array(7))).toBe('Float32Array(7)')
    expect(describeValue(Number.NaN)).toBe('NaN')
    expect(describeValue(10n)).toBe('10n')
  })

  it('describeValue shows what JSON writes as {}: a RegExp by its source, a Map, a Set, an Error, at any depth', () => {
    // An unmatched LoRA target printed `value: {}`.
    expect(describeValue(/q_proj|v_proj/i)).toBe('/q_proj|v_proj/i')
    expect(describeValue(new Map([['a', 1]]))).toBe('Map(1)')
    expect(describeValue(new Set([1, 2]))).toBe('Set(2)')
    expect(describeValue(new RangeError('too far'))).toBe('RangeError: too far')
    expect(describeValue(new ArrayBuffer(3))).toBe('ArrayBuffer(3)')
    expect(describeValue(Promise.resolve(1))).toBe('Promise')
    expect(describeValue({ targetModules: /proj$/, ids: new Int32Array(2), count: 10n, map: () => 1 }, 200)).toBe(
      '{"targetModules":"/proj$/","ids":"Int32Array(2)","count":"10n","map":"[function map]"}',
    )
    expect(describeValue([/a/, new Set()])).toBe('["/a/","Set(0)"]')
    expect(describeValue(new Date(0))).toBe('"1970-01-01T00:00:00.000Z"')
    expect(describeValue(null)).toBe('null')
  })

  it('parseArgument names the field and its value', () => {
    const schema = z.object({ sampling: z.object({ topP: z.number().max(1) }) })
    expect(parseArgument(schema, { sampling: { topP: 0.5 } }, 'options')).toEqual({ sampling: { topP: 0.5 } })
    try {
      parseArgument(schema, { sampling: { topP: 3 } }, 'options')
      expect.unreachable()
    } catch (error) {
      expect(InvalidArgumentError.isInstance(error)).toBe(true)
      const invalid = error as InvalidArgumentError
      expect(invalid.argument).toBe('options.sampling.topP')
      expect(invalid.value).toBe(3)
      expect(invalid.message).toContain("'options.sampling.topP' (value: 3)")
    }
  })

  it('FileSystemError.wrap names the file of a system error (ENOSPC on a write names none) and keeps its code; other errors pass', () => {
    const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' })
    const wrapped = FileSystemError.wrap(enospc, '/runs/a/model.safetensors', 'write')
    expect(FileSystemError.isInstance(wrapped)).toBe(true)
    expect((wrapped as FileSystemError).message).toBe('Cannot write /runs/a/model.safetensors: ENOSPC: no space left on device, write')
    expect(wrapped).toMatchObject({ path: '/runs/a/model.safetensors', operation: 'write', code: 'ENOSPC', cause: enospc })
    const parse = new ParseError({ source: 'x', message: 'y' })
    expect(FileSystemError.wrap(parse, '/x', 'write')).toBe(parse)
    const bug = new TypeError('not a system error')
    expect(FileSystemError.wrap(bug, '/x', 'write')).toBe(bug)
  })
})
