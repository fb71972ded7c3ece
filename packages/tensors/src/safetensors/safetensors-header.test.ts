import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ParseError } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseSafetensors } from './parse-safetensors.js'
import { readSafetensorsFile } from './read-safetensors-file.js'

/** A safetensors file from a header (bytes, JSON text or a value to stringify) and `data` bytes (or a count of zeros). */
function raw(header: unknown, data: number | Uint8Array = 0, headerLength?: bigint): Uint8Array {
  const json = header instanceof Uint8Array ? header : new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header))
  const body = typeof data === 'number' ? new Uint8Array(data) : data
  const bytes = new Uint8Array(8 + json.length + body.length)
  new DataView(bytes.buffer).setBigUint64(0, headerLength ?? BigInt(json.length), true)
  bytes.set(json, 8)
  bytes.set(body, 8 + json.length)
  return bytes
}

const float32Entry = (shape: number[], begin: number, end: number) => ({ dtype: 'F32', shape, data_offsets: [begin, end] })

interface BadCase {
  name: string
  input: Uint8Array
  path: (string | number)[]
  message: RegExp
}

const validFile = raw({ a: float32Entry([2], 0, 8), b: float32Entry([3], 8, 20) }, 20)

const badCases: BadCase[] = [
  {
    name: 'shorter than the length prefix',
    input: new Uint8Array(5),
    path: ['header'],
    message: /5 bytes, too short for the 8-byte header length/,
  },
  {
    name: 'header length past the end',
    input: raw('{}', 0, 500n),
    path: ['header'],
    message: /header length \(the first 8 bytes\) reaches past the end of the input \(10 bytes/,
  },
  {
    name: 'absurd header length',
    input: raw('{}', 0, 2n ** 63n),
    path: ['header'],
    message: /header length \(the first 8 bytes\) is more than the 100000000-byte limit/,
  },
  { name: 'header not UTF-8', input: raw(Uint8Array.of(0x7b, 0xff, 0x7d)), path: ['header'], message: /not valid UTF-8/ },
  { name: 'broken JSON', input: raw('{"a": {"dtype": "F32",'), path: ['header'], message: /not valid JSON/ },
  { name: 'trailing NUL padding', input: raw('{}\0\0'), path: ['header'], message: /not valid JSON/ },
  { name: 'header an array', input: raw('[]'), path: ['header'], message: /must be a JSON object .* got an array/ },
  { name: 'header null', input: raw('null'), path: ['header'], message: /must be a JSON object .* got null/ },
  {
    name: 'entry not an object',
    input: raw({ w: 5 }),
    path: ['header', 'w'],
    message: /entry of tensor "w" must be an object .* got a number/,
  },
  {
    name: 'entry missing dtype',
    input: raw({ w: { shape: [1], data_offsets: [0, 4] } }, 4),
    path: ['header', 'w', 'dtype'],
    message: /tensor "w" has no "dtype" field/,
  },
  {
    name: 'entry missing shape',
    input: raw({ w: { dtype: 'F32', data_offsets: [0, 4] } }, 4),
    path: ['header', 'w', 'shape'],
    message: /no "shape" field/,
  },
  {
    name: 'entry missing data_offsets',
    input: raw({ w: { dtype: 'F32', shape: [1] } }, 4),
    path: ['header', 'w', 'data_offsets'],
    message: /no "data_offsets" field/,
  },
  {
    name: 'dtype not a string',
    input: raw({ w: { dtype: 32, shape: [1], data_offsets: [0, 4] } }, 4),
    path: ['header', 'w', 'dtype'],
    message: /dtype must be a string, got a number/,
  },
  {
    name: 'unknown dtype',
    input: raw({ w: { dtype: 'Q32', shape: [1], data_offsets: [0, 4] } }, 4),
    path: ['header', 'w', 'dtype'],
    message: /unknown dtype "Q32" for tensor "w"; Ludic reads F32, F16, BF16, I32, I64/,
  },
  {
    name: 'unsupported dtype F64',
    input: raw({ w: { dtype: 'F64', shape: [1], data_offsets: [0, 8] } }, 8),
    path: ['header', 'w', 'dtype'],
    message: /tensor "w" has dtype F64, which Ludic does not read; supported dtypes: F32, F16, BF16, I32, I64/,
  },
  {
    name: 'unsupported dtype U8',
    input: raw({ w: { dtype: 'U8', shape: [3], data_offsets: [0, 3] } }, 3),
    path: ['header', 'w', 'dtype'],
    message: /dtype U8, which Ludic does not read/,
  },
  {
    name: 'unsupported dtype BOOL',
    input: raw({ w: { dtype: 'BOOL', shape: [2], data_offsets: [0, 2] } }, 2),
    path: ['header', 'w', 'dtype'],
    message: /dtype BOOL/,
  },
  {
    name: 'unsupported dtype F8_E4M3',
    input: raw({ w: { dtype: 'F8_E4M3', shape: [2], data_offsets: [0, 2] } }, 2),
    path: ['header', 'w', 'dtype'],
    message: /dtype F8_E4M3/,
  },
  {
    name: 'shape not an array',
    input: raw({ w: { dtype: 'F32', shape: 4, data_offsets: [0, 16] } }, 16),
    path: ['header', 'w', 'shape'],
    message: /shape must be an array of sizes, got a number/,
  },
  {
    name: 'negative size',
    input: raw({ w: float32Entry([2, -2], 0, 16) }, 16),
    path: ['header', 'w', 'shape', 1],
    message: /non-negative integers, got -2 in \[2, -2\]/,
  },
  {
    name: 'fractional size',
    input: raw({ w: float32Entry([1.5], 0, 6) }, 6),
    path: ['header', 'w', 'shape', 0],
    message: /non-negative integers, got 1.5/,
  },
  {
    name: 'size a string',
    input: raw({ w: float32Entry(['4'] as unknown as number[], 0, 16) }, 16),
    path: ['header', 'w', 'shape', 0],
    message: /non-negative integers, got "4"/,
  },
  {
    name: 'huge shape',
    input: raw({ w: float32Entry([2 ** 40, 2 ** 40], 0, 4) }, 4),
    path: ['header', 'w', 'shape'],
    message: /too many elements/,
  },
  {
    name: 'size beyond 2^53',
    input: raw('{"w":{"dtype":"F32","shape":[1e300],"data_offsets":[0,4]}}', 4),
    path: ['header', 'w', 'shape'],
    message: /too many elements/,
  },
  {
    name: 'huge byte count',
    input: raw({ w: { dtype: 'I64', shape: [2 ** 51], data_offsets: [0, 8] } }, 8),
    path: ['header', 'w', 'shape'],
    message: /too large/,
  },
  {
    name: 'shape disagrees with byte length',
    input: raw({ w: float32Entry([3], 0, 8) }, 8),
    path: ['header', 'w', 'data_offsets'],
    message: /span 8 bytes, but shape \[3\] of F32 takes 12/,
  },
  {
    name: 'sub-byte tensor off a byte boundary',
    input: raw({ w: { dtype: 'F4', shape: [3], data_offsets: [0, 2] } }, 2),
    path: ['header', 'w', 'shape'],
    message: /does not end on a byte boundary/,
  },
  {
    name: 'data_offsets not an array',
    input: raw({ w: { dtype: 'F32', shape: [1], data_offsets: '0-4' } }, 4),
    path: ['header', 'w', 'data_offsets'],
    message: /must be an array \[begin, end\]/,
  },
  {
    name: 'data_offsets of three',
    input: raw({ w: { dtype: 'F32', shape: [1], data_offsets: [0, 4, 8] } }, 4),
    path: ['header', 'w', 'data_offsets'],
    message: /must be an array \[begin, end\], got \[0, 4, 8\]/,
  },
  {
    name: 'negative offset',
    input: raw({ w: float32Entry([1], -4, 0) }, 4),
    path: ['header', 'w', 'data_offsets'],
    message: /non-negative integers, got \[-4, 0\]/,
  },
  {
    name: 'fractional offset',
    input: raw({ w: float32Entry([1], 0.5, 4.5) }, 4),
    path: ['header', 'w', 'data_offsets'],
    message: /non-negative integers/,
  },
  {
    name: 'reversed offsets',
    input: raw({ w: float32Entry([0], 4, 0) }, 4),
    path: ['header', 'w', 'data_offsets'],
    message: /\[4, 0\] are reversed/,
  },
  {
    name: 'offsets past the data (truncated)',
    input: raw({ a: float32Entry([2], 0, 8), b: float32Entry([3], 8, 20) }, 12),
    path: ['header', 'b', 'data_offsets'],
    message: /truncated: tensor "b" ends at byte 20 of the data section, which holds only 12 bytes/,
  },
  {
    name: 'file truncated in the data',
    input: validFile.subarray(0, validFile.length - 1),
    path: ['header', 'b', 'data_offsets'],
    message: /truncated/,
  },
  {
    name: 'overlapping tensors',
    input: raw({ a: float32Entry([2], 0, 8), b: float32Entry([2], 4, 12) }, 12),
    path: ['header', 'b', 'data_offsets'],
    message: /\[4, 12\] overlap tensor "a", which ends at byte 8/,
  },
  {
    name: 'the same range twice',
    input: raw({ a: float32Entry([1], 0, 4), b: float32Entry([1], 0, 4) }, 4),
    path: ['header', 'b', 'data_offsets'],
    message: /overlap tensor "a"/,
  },
  {
    name: 'hole between tensors',
    input: raw({ a: float32Entry([1], 0, 4), b: float32Entry([1], 8, 12) }, 12),
    path: ['header', 'b', 'data_offsets'],
    message: /leave a hole: bytes 4 to 8 after tensor "a" belong to no tensor/,
  },
  {
    name: 'hole at the start',
    input: raw({ a: float32Entry([1], 4, 8) }, 8),
    path: ['header', 'a', 'data_offsets'],
    message: /bytes 0 to 4 at the start of the data section/,
  },
  {
    name: 'bytes after the last tensor',
    input: raw({ a: float32Entry([1], 0, 4) }, 8),
    path: ['header', 'a', 'data_offsets'],
    message: /after the last tensor \("a", ending at byte 4\) 4 bytes of the data section belong to no tensor/,
  },
  { name: 'data but no tensors', input: raw({}, 4), path: ['header'], message: /lists no tensor, but 4 bytes/ },
  {
    name: 'duplicate tensor name',
    input: raw('{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', 4),
    path: ['header', 'w'],
    message: /tensor name "w" appears more than once/,
  },
  {
    name: 'duplicate field',
    input: raw('{"w":{"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]}}', 4),
    path: ['header', 'w', 'dtype'],
    message: /field "dtype" appears more than once/,
  },
  {
    name: 'metadata not an object',
    input: raw({ __metadata__: 'pt' }),
    path: ['header', '__metadata__'],
    message: /__metadata__ must be an object of strings, got a string/,
  },
  {
    name: 'metadata value not a string',
    input: raw({ __metadata__: { step: 3 } }),
    path: ['header', '__metadata__', 'step'],
    message: /values must be strings, got a number 3/,
  },
]

describe('safetensors header validation', () => {
  let directory: string
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'ludic-safetensors-header-'))
  })
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true, maxRetries: 5 })
  })

  it.each(badCases)('$name: ParseError at the right path, from memory and from a file', async ({ input, path, message }) => {
    let caught: unknown
    try {
      parseSafetensors(input)
    } catch (error) {
      caught = error
    }
    expect(ParseError.isInstance(caught), String(caught)).toBe(true)
    expect((caught as ParseError).path).toEqual(path)
    expect((caught as ParseError).message).toMatch(message)
    expect((caught as ParseError).source).toBe('safetensors buffer')

    const file = join(directory, 'bad.safetensors')
    await writeFile(file, input)
    const fromFile = await readSafetensorsFile(file).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(ParseError.isInstance(fromFile), String(fromFile)).toBe(true)
    expect((fromFile as ParseError).path).toEqual(path)
    expect((fromFile as ParseError).message).toMatch(message)
    expect((fromFile as ParseError).source).toBe(file)
  })

  it('accepts what the reference implementation accepts', () => {
    // Empty tensors may share an offset; __metadata__ may be null; leading whitespace and an unpadded
    // header are fine; unknown fields in an entry are ignored.
    const contents = parseSafetensors(
      raw(
        ' {"__metadata__":null,"e":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"f":{"dtype":"F16","shape":[2,0],"data_offsets":[0,0]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1}}',
        Uint8Array.of(0, 0, 0x80, 0x3f),
      ),
    )
    expect(contents.metadata).toEqual({})
    expect([...contents.tensors.keys()].sort()).toEqual(['a', 'e', 'f'])
    expect([...contents.tensors.get('a')!.data]).toEqual([1])
    expect(contents.tensors.get('f')!.shape).toEqual([2, 0])
  })

  it('keeps a "__proto__" name or metadata key as data', () => {
    const contents = parseSafetensors(raw('{"__metadata__":{"__proto__":"x"},"__proto__":{"dtype":"I32","shape":[],"data_offsets":[0,4]}}', 4))
    expect(Object.getPrototypeOf(contents.metadata)).toBe(Object.prototype)
    expect(Object.keys(contents.metadata)).toEqual(['__proto__'])
    expect(contents.tensors.get('__proto__')!.shape).toEqual([])
  })
})
