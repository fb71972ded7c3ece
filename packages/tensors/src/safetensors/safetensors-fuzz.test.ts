/**
 * Seeded fuzzing of the readers: random valid files, then bit flips, truncations, extensions, header-length
 * rewrites, structural header edits and byte edits. Every input must parse (and then be self-consistent) or
 * throw a `ParseError`: any other exception, a crash or a hang fails.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRandom, ParseError, type Random } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseSafetensors } from './parse-safetensors.js'
import { readSafetensorsFile } from './read-safetensors-file.js'
import { safetensorsDtypes, supportedDtypes } from './safetensors-dtype.js'
import type { SafetensorsContents, SafetensorsTensorInput } from './safetensors-tensor.js'
import { serializeSafetensors } from './serialize-safetensors.js'

const encoder = new TextEncoder()
const decoder = new TextDecoder()

function randomValidFile(random: Random): Uint8Array {
  const tensors: Record<string, SafetensorsTensorInput> = {}
  const count = random.nextInt(5)
  for (let index = 0; index < count; index++) {
    const shape = Array.from({ length: random.nextInt(4) }, () => random.nextInt(4))
    const length = shape.reduce((product, size) => product * size, 1)
    const dtype = random.choice(supportedDtypes)
    const name = random.choice(['w', 'b', 'model.layers.0.weight', 'é', '\u{1F600}', '__proto__', 'x"y', `t${index}`])
    if (dtype === 'I32') tensors[name] = { dtype, shape, data: Int32Array.from({ length }, () => random.nextUint32() | 0) }
    else if (dtype === 'I64') tensors[name] = { dtype, shape, data: BigInt64Array.from({ length }, () => BigInt(random.nextUint32()) << 20n) }
    else tensors[name] = { dtype, shape, data: Float32Array.from({ length }, () => random.nextNormal()) }
  }
  const metadata = random.nextInt(2) === 0 ? undefined : { format: random.choice(['pt', 'np', '']) }
  return serializeSafetensors(tensors, { metadata })
}

const interestingValues: unknown[] = [
  -1,
  0,
  1,
  1.5,
  2 ** 31,
  2 ** 32,
  2 ** 53,
  1e300,
  -1e300,
  '4',
  null,
  true,
  [],
  {},
  [1, 2, 3],
  [-4, 0],
  [0, 2 ** 60],
  [8, 4],
]

function randomJsonValue(random: Random): unknown {
  return random.nextInt(3) === 0 ? random.choice([...safetensorsDtypes, 'Q32', 'f32']) : random.choice(interestingValues)
}

/** Rewrites the header JSON: fields replaced, removed or added; entries replaced; names duplicated. */
function editHeader(bytes: Uint8Array, random: Random): Uint8Array {
  if (bytes.length < 8) return bytes
  const length = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true))
  if (8 + length > bytes.length) return bytes
  let header: Record<string, Record<string, unknown>>
  try {
    header = JSON.parse(decoder.decode(bytes.subarray(8, 8 + length))) as typeof header
  } catch {
    return bytes
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) return bytes
  const names = Object.keys(header)
  const name = names.length > 0 && random.nextInt(4) !== 0 ? random.choice(names) : `new${random.nextInt(3)}`
  let text: string
  switch (random.nextInt(6)) {
    case 0:
    case 1: {
      const entry = typeof header[name] === 'object' && header[name] !== null ? { ...header[name] } : {}
      entry[random.choice(['dtype', 'shape', 'data_offsets', 'extra'])] = randomJsonValue(random)
      header[name] = entry
      text = JSON.stringify(header)
      break
    }
    case 2: {
      const entry = { ...header[name] }
      delete entry[random.choice(['dtype', 'shape', 'data_offsets'])]
      header[name] = entry
      text = JSON.stringify(header)
      break
    }
    case 3:
      ;(header as Record<string, unknown>)[name] = randomJsonValue(random)
      text = JSON.stringify(header)
      break
    case 4: {
      // A name or field twice: JSON.stringify cannot write that, so splice the text.
      const full = JSON.stringify(header)
      text = full.length > 2 && names.length > 0 ? `{${JSON.stringify(names[0])}:${JSON.stringify(header[names[0]!])},${full.slice(1)}` : full
      break
    }
    default: {
      const entry = header[name]
      const offsets = entry?.data_offsets
      if (Array.isArray(offsets)) entry!.data_offsets = [Number(offsets[0]) + random.nextInt(9) - 4, Number(offsets[1]) + random.nextInt(9) - 4]
      text = JSON.stringify(header)
    }
  }
  const json = encoder.encode(text)
  const data = bytes.subarray(8 + length)
  const result = new Uint8Array(8 + json.length + data.length)
  const declared = random.nextInt(10) === 0 ? json.length + random.nextInt(17) - 8 : json.length
  new DataView(result.buffer).setBigUint64(0, BigInt(Math.max(0, declared)), true)
  result.set(json, 8)
  result.set(data, 8 + json.length)
  return result
}

function mutate(original: Uint8Array, random: Random): Uint8Array {
  let bytes: Uint8Array = original.slice()
  const steps = 1 + random.nextInt(3)
  for (let step = 0; step < steps; step++) {
    const headerEnd = Math.min(bytes.length, 8 + 160)
    switch (random.nextInt(8)) {
      case 0: {
        // Bit flips, half the time in the length prefix and header.
        const flips = 1 + random.nextInt(4)
        for (let flip = 0; flip < flips && bytes.length > 0; flip++) {
          const position = random.nextInt(2) === 0 ? random.nextInt(Math.max(1, headerEnd)) : random.nextInt(bytes.length)
          bytes[position]! ^= 1 << random.nextInt(8)
        }
        break
      }
      case 1:
        bytes = bytes.slice(0, random.nextInt(bytes.length + 1))
        break
      case 2: {
        const extra = Uint8Array.from({ length: 1 + random.nextInt(16) }, () => random.nextInt(256))
        const extended = new Uint8Array(bytes.length + extra.length)
        extended.set(bytes)
        extended.set(extra, bytes.length)
        bytes = extended
        break
      }
      case 3: {
        if (bytes.length < 8) break
        const current = new DataView(bytes.buffer).getBigUint64(0, true)
        const choices = [0n, 1n, current - 1n, current + 1n, current + 8n, BigInt(bytes.length), 2n ** 32n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n]
        new DataView(bytes.buffer).setBigUint64(0, BigInt.asUintN(64, random.choice(choices)), true)
        break
      }
      case 4:
      case 5:
        bytes = editHeader(bytes, random)
        break
      case 6: {
        // Replace a header byte with a JSON-significant character.
        if (bytes.length <= 8) break
        const characters = '{}[]",:0123456789-.eE \\u'
        bytes[8 + random.nextInt(headerEnd - 8)] = characters.charCodeAt(random.nextInt(characters.length))
        break
      }
      default:
        bytes = Uint8Array.from({ length: random.nextInt(64) }, () => random.nextInt(256))
    }
  }
  return bytes
}

/** A parsed file must hold tensors whose data match their shapes and dtypes. */
function checkConsistent(contents: SafetensorsContents): void {
  for (const [name, tensor] of contents.tensors) {
    const elements = tensor.shape.reduce((product, size) => product * size, 1)
    if (tensor.data.length !== elements) throw new Error(`tensor ${name}: ${tensor.data.length} elements for shape [${tensor.shape}]`)
    const expected = tensor.dtype === 'I32' ? Int32Array : tensor.dtype === 'I64' ? BigInt64Array : Float32Array
    if (!(tensor.data instanceof expected)) throw new Error(`tensor ${name}: ${tensor.dtype} read into ${tensor.data.constructor.name}`)
  }
  for (const value of Object.values(contents.metadata)) if (typeof value !== 'string') throw new Error('metadata value not a string')
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes.subarray(0, 256)).toString('hex')

describe('safetensors fuzzing', () => {
  let directory: string
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'ludic-safetensors-fuzz-'))
  })
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true, maxRetries: 5 })
  })

  it('parseSafetensors: 4000 random and mutated inputs either parse or throw ParseError', () => {
    const random = createRandom(0x5afe)
    const failures: string[] = []
    const outcomes = { parsed: 0, rejected: 0 }
    for (let trial = 0; trial < 4000; trial++) {
      const valid = randomValidFile(random)
      const input = trial % 10 === 0 ? valid : mutate(valid, random)
      try {
        checkConsistent(parseSafetensors(input))
        outcomes.parsed++
      } catch (error) {
        if (ParseError.isInstance(error)) outcomes.rejected++
        else failures.push(`trial ${trial}: ${String(error)} — input ${hex(input)}`)
      }
      if (trial % 10 === 0 && failures.length === 0) {
        expect(parseSafetensors(valid).tensors.size).toBeGreaterThanOrEqual(0) // unmutated files always parse
      }
    }
    expect(failures).toEqual([])
    // Both outcomes are well represented, so the mutations exercise the checks rather than the happy path only.
    expect(outcomes.parsed).toBeGreaterThan(400)
    expect(outcomes.rejected).toBeGreaterThan(2000)
  })

  it('readSafetensorsFile: 300 mutated files either read or throw ParseError', async () => {
    const random = createRandom(0xf11e)
    const failures: string[] = []
    const path = join(directory, 'fuzz.safetensors')
    for (let trial = 0; trial < 300; trial++) {
      const input = mutate(randomValidFile(random), random)
      await writeFile(path, input)
      try {
        checkConsistent(await readSafetensorsFile(path))
      } catch (error) {
        if (!ParseError.isInstance(error)) failures.push(`trial ${trial}: ${String(error)} — input ${hex(input)}`)
      }
    }
    expect(failures).toEqual([])
  })
})
