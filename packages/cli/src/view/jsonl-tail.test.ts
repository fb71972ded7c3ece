import { spawnSync } from 'node:child_process'
import { appendFile, mkdir, mkdtemp, realpath, rename, rm, symlink, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { JsonlTail } from './jsonl-tail.js'

let directory: string
let count = 0
beforeAll(async () => {
  directory = await realpath(await mkdtemp(join(tmpdir(), 'ludic-jsonl-tail-')))
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true })
})

/** A fresh run directory with `name` holding `text`, and a tail over it. */
async function tailOver(text: string, options: { maxLineBytes?: number; chunkBytes?: number } = {}) {
  const root = join(directory, `run-${count++}`)
  await mkdir(root)
  const path = join(root, 'log.jsonl')
  await writeFile(path, text)
  return { root, path, tail: new JsonlTail(root, 'log.jsonl', options) }
}

const values = (poll: { lines: { value: unknown }[] }) => poll.lines.map((line) => line.value)

describe('JsonlTail', () => {
  it('reads only what was appended since the last poll, and an incomplete last line once it has its newline', async () => {
    const { path, tail } = await tailOver('{"step":1}\n{"step":2}\n{"st')
    const first = await tail.poll()
    expect(values(first)).toEqual([{ step: 1 }, { step: 2 }])
    expect(first.lines.map((line) => [line.line, line.offset, line.length])).toEqual([
      [1, 0, 10],
      [2, 11, 10],
    ])
    expect(first.pending).toEqual({ line: 3, reason: expect.stringContaining('incomplete last line (4 bytes without a newline') })
    expect(await tail.poll()).toMatchObject({ reset: false, lines: [], skipped: [] })
    await appendFile(path, 'ep":3}\n\n{"step":4}\n')
    const second = await tail.poll()
    expect(second.reset).toBe(false)
    expect(second.lines.map((line) => [line.line, line.value])).toEqual([
      [3, { step: 3 }],
      [5, { step: 4 }],
    ]) // the blank line 4 is neither a record nor skipped
    expect(second.pending).toBeUndefined()
    expect(await tail.readLine(second.lines[0]!.offset, second.lines[0]!.length)).toEqual({ step: 3 })
  })

  it('skips invalid JSON and lines over the limit (kept across chunks and polls, never gathered whole), reading on after them', async () => {
    const long = `{"text":"${'x'.repeat(300)}"}`
    const { path, tail } = await tailOver(`{"a":1}\nnot json <script>\n${long}\n{"b":2}\n`, { maxLineBytes: 100, chunkBytes: 32 })
    const first = await tail.poll()
    expect(values(first)).toEqual([{ a: 1 }, { b: 2 }])
    expect(first.skipped).toEqual([
      { line: 2, reason: 'invalid JSON' },
      { line: 3, reason: `longer than 100 bytes (${long.length} bytes): not read` },
    ])
    // A long line still being written: consumed as it comes, reported once it ends.
    await appendFile(path, 'y'.repeat(150))
    const during = await tail.poll()
    expect(during.lines).toEqual([])
    expect(during.pending).toEqual({ line: 5, reason: 'longer than 100 bytes so far, no newline yet: not read' })
    await appendFile(path, `${'y'.repeat(150)}\n{"c":3}\n`)
    const after = await tail.poll()
    expect(after.skipped).toEqual([{ line: 5, reason: 'longer than 100 bytes (300 bytes): not read' }])
    expect(after.lines.map((line) => [line.line, line.value])).toEqual([[6, { c: 3 }]])
  })

  it('reads a file from its start again when it shrank, was rewritten in place or replaced (a resumed run)', async () => {
    const { path, tail } = await tailOver('{"step":1}\n{"step":2}\n{"step":3}\n')
    expect(values(await tail.poll())).toHaveLength(3)
    await truncate(path, 11) // cut back to step 1
    const shrunk = await tail.poll()
    expect(shrunk.reset).toBe(true)
    expect(values(shrunk)).toEqual([{ step: 1 }])
    // Rewritten to the same size with other steps after the first: the bytes before the offset changed.
    await writeFile(path, '{"step":1}\n{"step":8}\n')
    expect(values(await tail.poll())).toEqual([{ step: 8 }]) // grown: step 1 is unchanged, so not a reset yet
    await writeFile(path, '{"step":1}\n{"step":9}\n{"step":10}\n')
    const rewritten = await tail.poll()
    expect(rewritten.reset).toBe(true)
    expect(values(rewritten)).toEqual([{ step: 1 }, { step: 9 }, { step: 10 }])
    // Replaced by another file (written beside it, then renamed over it), longer and starting the same.
    await writeFile(`${path}.new`, '{"step":1}\n{"step":9}\n{"step":10}\n{"step":11}\n')
    await rename(`${path}.new`, path)
    const replaced = await tail.poll()
    expect(replaced.reset).toBe(true)
    expect(values(replaced)).toHaveLength(4)
    await rm(path)
    expect(await tail.poll()).toMatchObject({ reset: true, lines: [], refused: undefined })
  })

  it('refuses a symbolic link out of the run directory and a FIFO, reading nothing of them', async () => {
    const secret = join(directory, 'secret.jsonl')
    await writeFile(secret, '{"password":"hunter2"}\n')
    const { root, path } = await tailOver('')
    await rm(path)
    await symlink(secret, path)
    const linked = await new JsonlTail(root, 'log.jsonl').poll()
    expect(linked).toMatchObject({ lines: [], refused: 'log.jsonl is a symbolic link out of the run directory: not read' })
    // A link inside the run directory is followed.
    await writeFile(join(root, 'inner.jsonl'), '{"ok":true}\n')
    await symlink(join(root, 'inner.jsonl'), join(root, 'alias.jsonl'))
    expect(values(await new JsonlTail(root, 'alias.jsonl').poll())).toEqual([{ ok: true }])
    if (process.platform !== 'win32') {
      expect(spawnSync('mkfifo', [join(root, 'fifo.jsonl')]).status).toBe(0)
      expect(await new JsonlTail(root, 'fifo.jsonl').poll()).toMatchObject({ lines: [], refused: 'fifo.jsonl is not a regular file: not read' })
    }
  })
})
