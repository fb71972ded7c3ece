import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseSafetensors } from './parse-safetensors.js'
import { readSafetensorsFile } from './read-safetensors-file.js'
import { serializeSafetensors } from './serialize-safetensors.js'

describe('readSafetensorsFile', () => {
  it('reads everything, the same as parseSafetensors on the bytes', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'ludic-read-safetensors-'))
    try {
      const bytes = serializeSafetensors(
        {
          w: { dtype: 'BF16', shape: [2, 2], data: Float32Array.of(1, 2, 3, 4) },
          b: { shape: [2], data: Float32Array.of(0.5, -0.5) },
          steps: { shape: [], data: BigInt64Array.of(12n) },
        },
        { metadata: { format: 'pt' } },
      )
      const path = join(directory, 'model.safetensors')
      await writeFile(path, bytes)
      expect(await readSafetensorsFile(path)).toEqual(parseSafetensors(bytes))
    } finally {
      await rm(directory, { recursive: true, force: true, maxRetries: 5 })
    }
  })
})
