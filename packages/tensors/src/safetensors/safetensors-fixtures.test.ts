/**
 * Files written by Hugging Face's Python `safetensors` (see scripts/make-safetensors-fixtures.py): reading
 * them gives the values Python stored, and writing the same tensors gives the same bytes.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseSafetensors } from './parse-safetensors.js'
import { readSafetensorsFile } from './read-safetensors-file.js'
import { readShardedSafetensors } from './read-sharded-safetensors.js'
import type { SupportedDtype } from './safetensors-dtype.js'
import type { SafetensorsTensor, SafetensorsTensorInput } from './safetensors-tensor.js'
import { serializeSafetensors } from './serialize-safetensors.js'
import { writeShardedSafetensors } from './write-sharded-safetensors.js'

const fixtures = fileURLToPath(new URL('../../test/fixtures/safetensors/', import.meta.url))

interface ExpectedTensor {
  dtype: SupportedDtype
  shape: number[]
  sourceBits?: number[]
  storedBits?: number[]
  values?: (number | string)[]
}
interface ExpectedFile {
  metadata: Record<string, string>
  tensors: Record<string, ExpectedTensor>
}
interface Expected {
  files: {
    'all-dtypes.safetensors': ExpectedFile
    'names-and-order.safetensors': ExpectedFile
    sharded: ExpectedFile & { maxShardBytes: number; order: string[]; files: string[] }
  }
}

const floatsFromBits = (bits: number[]) => new Float32Array(Uint32Array.from(bits).buffer)

/** The tensor Python wrote, as input to our writer (float tensors from their float32 source). */
function toInput(expected: ExpectedTensor): SafetensorsTensorInput {
  const { dtype, shape } = expected
  if (dtype === 'I32') return { dtype, shape, data: Int32Array.from(expected.values as number[]) }
  if (dtype === 'I64') return { dtype, shape, data: BigInt64Array.from(expected.values as string[], BigInt) }
  return { dtype, shape, data: floatsFromBits(expected.sourceBits!) }
}

function expectStored(name: string, tensor: SafetensorsTensor, expected: ExpectedTensor): void {
  expect(tensor.dtype, name).toBe(expected.dtype)
  expect(tensor.shape, name).toEqual(expected.shape)
  if (tensor.dtype === 'I32') expect([...tensor.data], name).toEqual(expected.values)
  else if (tensor.dtype === 'I64') expect(Array.from(tensor.data, String), name).toEqual(expected.values)
  else expect(Array.from(new Uint32Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.length)), name).toEqual(expected.storedBits)
}

describe('safetensors fixtures written by Python', () => {
  let expected: Expected
  let scratch: string
  beforeAll(async () => {
    expected = JSON.parse(await readFile(join(fixtures, 'expected-values.json'), 'utf8')) as Expected
    scratch = await mkdtemp(join(tmpdir(), 'ludic-safetensors-fixtures-'))
  })
  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true, maxRetries: 5 })
  })

  for (const file of ['all-dtypes.safetensors', 'names-and-order.safetensors'] as const) {
    it(`${file}: reads the values Python stored, from memory and from disk`, async () => {
      const { metadata, tensors } = expected.files[file]
      const bytes = await readFile(join(fixtures, file))
      for (const contents of [parseSafetensors(bytes), await readSafetensorsFile(join(fixtures, file))]) {
        expect(contents.metadata).toEqual(metadata)
        expect([...contents.tensors.keys()].sort()).toEqual(Object.keys(tensors).sort())
        for (const [name, tensor] of contents.tensors) expectStored(name, tensor, tensors[name]!)
      }
    })

    it(`${file}: writing the same tensors gives the same bytes`, async () => {
      const { metadata, tensors } = expected.files[file]
      const inputs = Object.fromEntries(Object.entries(tensors).map(([name, tensor]) => [name, toInput(tensor)]))
      const written = serializeSafetensors(inputs, Object.keys(metadata).length === 0 ? {} : { metadata })
      const python = await readFile(join(fixtures, file))
      expect(new TextDecoder().decode(written.subarray(0, 8 + python.readUInt32LE(0)))).toBe(
        new TextDecoder().decode(python.subarray(0, 8 + python.readUInt32LE(0))),
      )
      expect(Buffer.compare(written, python)).toBe(0)
    })
  }

  it('sharded: reads the transformers-style checkpoint', async () => {
    const { tensors, files, order } = expected.files.sharded
    const checkpoint = await readShardedSafetensors(join(fixtures, 'sharded'))
    try {
      expect(checkpoint.files).toEqual(files)
      expect([...checkpoint.names].sort()).toEqual([...order].sort())
      expect(checkpoint.metadata).toEqual({ format: 'pt' })
      expect(checkpoint.indexMetadata).toEqual({ total_parameters: 140, total_size: 384 })
      for (const name of checkpoint.names) expectStored(name, await checkpoint.read(name), tensors[name]!)
    } finally {
      await checkpoint.close()
    }
  })

  it('sharded: writing the same tensors gives the same files, index included', async () => {
    const { tensors, files, order, maxShardBytes } = expected.files.sharded
    const inputs = new Map(order.map((name) => [name, toInput(tensors[name]!)]))
    const result = await writeShardedSafetensors(scratch, inputs, { maxShardBytes })
    expect(result.files).toEqual(files)
    const written = (await readdir(scratch)).sort()
    expect(written).toEqual((await readdir(join(fixtures, 'sharded'))).sort())
    for (const file of written) {
      expect(Buffer.compare(await readFile(join(scratch, file)), await readFile(join(fixtures, 'sharded', file))), file).toBe(0)
    }
  })
})
