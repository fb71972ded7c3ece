import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { InvalidArgumentError } from '../errors.js'
import { openRegularFile, readRegularFile } from './regular-file.js'

const directory = mkdtempSync(join(tmpdir(), 'ludic-regular-file-'))
afterAll(() => rmSync(directory, { recursive: true, force: true, maxRetries: 5 }))

describe('readRegularFile', () => {
  it('reads a regular file whole, as bytes or text', async () => {
    const path = join(directory, 'text.json')
    writeFileSync(path, '{"a": "é"}')
    expect(await readRegularFile(path, { maxBytes: 100, encoding: 'utf8' })).toBe('{"a": "é"}')
    expect(Array.from(await readRegularFile(path, { maxBytes: 100 }))).toEqual(Array.from(Buffer.from('{"a": "é"}')))
  })

  it('refuses a FIFO at once instead of waiting for a writer (a blocked open holds a thread of the pool and the exit)', async () => {
    const fifo = join(directory, 'adapter_config.json')
    execFileSync('mkfifo', [fifo])
    const error = await readRegularFile(fifo, { maxBytes: 1024, argument: 'lora_path' }).catch((caught: unknown) => caught)
    expect(InvalidArgumentError.isInstance(error)).toBe(true)
    expect((error as InvalidArgumentError).argument).toBe('lora_path')
    expect((error as Error).message).toContain('a FIFO (named pipe), not a regular file')
  })

  it('refuses a device (/dev/zero would be read without end) and a directory', async () => {
    await expect(readRegularFile('/dev/zero', { maxBytes: 1024 })).rejects.toThrow(/is a character device, not a regular file/)
    await expect(readRegularFile(directory, { maxBytes: 1024 })).rejects.toThrow(/is a directory, not a regular file/)
  })

  it('bounds the size before reading, naming the path and the limit', async () => {
    const path = join(directory, 'large.bin')
    writeFileSync(path, new Uint8Array(2048))
    await expect(readRegularFile(path, { maxBytes: 1024, argument: 'config' })).rejects.toThrow(
      /Invalid argument 'config' \(value: ".*large\.bin"\): is 2048 bytes; the limit is 1024/,
    )
    const { handle, size } = await openRegularFile(path)
    await handle.close()
    expect(size).toBe(2048)
  })

  it("passes Node's own errors through with their code", async () => {
    await expect(readRegularFile(join(directory, 'missing'), { maxBytes: 10 })).rejects.toMatchObject({ code: 'ENOENT' })
  })
})
