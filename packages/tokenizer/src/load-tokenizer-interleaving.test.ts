import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { loadTokenizer } from './load-tokenizer.js'

// The order of file-system answers is forced here, not left to the machine's load: every operation on
// `tokenizer_config.json` waits until the read of `tokenizer.json` has settled and the event loop has turned
// (so Node has had the chance to report a rejection nobody handles), the order a busy machine produced.
const gate = vi.hoisted(() => {
  let settled = () => {}
  const tokenizerRead = new Promise<void>((resolve) => (settled = resolve))
  return { tokenizerRead, settled: () => settled() }
})
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>()
  const afterTokenizerRead = async (path: unknown) => {
    if (typeof path === 'string' && path.endsWith('tokenizer_config.json')) {
      await gate.tokenizerRead
      for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setTimeout(resolve, 0))
    }
  }
  return {
    ...actual,
    stat: (async (path: string, ...rest: []) => {
      await afterTokenizerRead(path)
      return actual.stat(path, ...rest)
    }) as typeof actual.stat,
    readFile: (async (path: string, ...rest: [BufferEncoding]) => {
      await afterTokenizerRead(path)
      try {
        return await actual.readFile(path, ...rest)
      } finally {
        if (typeof path === 'string' && basename(path) === 'tokenizer.json') gate.settled()
      }
    }) as typeof actual.readFile,
  }
})

describe('loadTokenizer when one file fails while another is still being looked at', () => {
  let directory = ''
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'ludic-tokenizer-order-'))
    await writeFile(join(directory, 'tokenizer.json'), '{ "model": ')
    await writeFile(join(directory, 'tokenizer_config.json'), '{}')
  })
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true, maxRetries: 5 })
  })

  it('rejects its own promise with the ParseError, and leaves no rejection unhandled meanwhile', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      await expect(loadTokenizer(directory)).rejects.toMatchObject({ name: 'ParseError', message: expect.stringMatching(/not valid JSON/) })
      // Any rejection left unhandled while the configuration was looked at has been reported by now.
      await new Promise((resolve) => setTimeout(resolve, 10))
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
    expect(unhandled).toEqual([])
  })
})
