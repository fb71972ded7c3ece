import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createFakeHub } from '@ludic/hub/testing'
import { describe, expect, it } from 'vitest'
import { referenceFiles } from '../test/reference-tokenizers.js'
import { loadTokenizer } from './load-tokenizer.js'

describe('loadTokenizer', () => {
  const files = referenceFiles('llama2')

  it('loads a model directory, a tokenizer.json path, or parsed JSON alike', async () => {
    const fromDirectory = await loadTokenizer(files.directory)
    const fromFile = await loadTokenizer(`${files.directory}/tokenizer.json`)
    const fromObject = await loadTokenizer({ tokenizer: files.tokenizer, config: files.config })
    for (const tokenizer of [fromDirectory, fromFile, fromObject]) {
      expect(Array.from(tokenizer.encode('Hello world'))).toEqual([1, 22557, 1526])
      expect(tokenizer.bosTokenId).toBe(1)
    }
  })

  it('refuses a path without tokenizer.json, naming the file looked for, with a missing-file cause (code ENOENT)', async () => {
    const error = await loadTokenizer('/nonexistent/model').catch((caught: unknown) => caught)
    expect((error as Error).message).toMatch(/has no tokenizer.json \(looked for \/nonexistent\/model\/tokenizer.json\)/)
    expect(((error as Error).cause as { code?: string }).code).toBe('ENOENT')
  })

  it('loads a Hub repository id (owner/name[@revision]) through the Hugging Face cache, downloading only the tokenizer files', async () => {
    const repo = { 'tokenizer.json': files.tokenizerText, 'tokenizer_config.json': JSON.stringify(files.config), 'model.safetensors': new Uint8Array(4096) }
    const hub = await createFakeHub({ repos: [{ id: 'ludic-test/llama2', files: repo }] })
    const cacheDir = await mkdtemp(join(tmpdir(), 'ludic-tokenizer-hub-'))
    try {
      const tokenizer = await loadTokenizer('ludic-test/llama2', { hub: { cacheDir, endpoint: hub.endpoint, token: false, offline: false } })
      expect(Array.from(tokenizer.encode('Hello world'))).toEqual([1, 22557, 1526])
      expect(hub.requests.map((request) => request.path).filter((path) => path.endsWith('model.safetensors'))).toEqual([])
      // Then from the cache alone.
      const offline = await loadTokenizer('ludic-test/llama2@main', {
        hub: { cacheDir, offline: true, fetch: () => Promise.reject(new Error('no network in this test')) },
      })
      expect(Array.from(offline.encode('Hello world'))).toEqual([1, 22557, 1526])
      await expect(loadTokenizer('ludic-test/absent', { hub: { cacheDir, endpoint: hub.endpoint, token: false, offline: false } })).rejects.toMatchObject({
        name: 'HubError',
        reason: 'missing',
      })
    } finally {
      await hub.close()
      await rm(cacheDir, { recursive: true, force: true, maxRetries: 5 })
    }
  })

  it("says that no local folder exists and what was tried for a missing path shaped like owner/name (the role-play guide's, offline)", async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), 'ludic-tokenizer-empty-'))
    try {
      const error = await loadTokenizer('models/SmolLM2-135M-Instruct', {
        hub: { cacheDir, offline: true, fetch: () => Promise.reject(new Error('no network in this test')) },
      }).catch((caught: unknown) => caught)
      expect(error).toMatchObject({ name: 'HubError', reason: 'missing', cause: { reason: 'offline' } })
      expect((error as Error).message).toMatch(/^No model at 'models\/SmolLM2-135M-Instruct': tried the local path .*, which does not exist/)
    } finally {
      await rm(cacheDir, { recursive: true, force: true, maxRetries: 5 })
    }
  })
})
