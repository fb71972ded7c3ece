import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { writeFileAtomically, writeFully } from './write-file-atomically.js'

describe('writeFileAtomically', () => {
  let directory: string
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'ludic-atomic-'))
  })
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true, maxRetries: 5 })
  })

  it('replaces the file with the whole new content and leaves no temporary file', async () => {
    const path = join(directory, 'a.bin')
    await writeFile(path, 'old')
    await writeFileAtomically(path, async (handle) => {
      await writeFully(handle, new TextEncoder().encode('new '), 0)
      await writeFully(handle, new TextEncoder().encode('content'), 4)
    })
    expect(await readFile(path, 'utf8')).toBe('new content')
    expect(await readdir(directory)).toEqual(['a.bin'])
  })

  it('leaves the old file in place and removes the temporary one when writing fails', async () => {
    const path = join(directory, 'b.bin')
    await writeFile(path, 'old')
    await expect(
      writeFileAtomically(path, async (handle) => {
        await writeFully(handle, new TextEncoder().encode('half-writ'), 0)
        throw new Error('disk on fire')
      }),
    ).rejects.toThrow('disk on fire')
    expect(await readFile(path, 'utf8')).toBe('old')
    expect((await readdir(directory)).sort()).toEqual(['a.bin', 'b.bin'])
  })
})
