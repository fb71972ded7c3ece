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

  it('refuses a path without tokenizer.json', async () => {
    await expect(loadTokenizer('/nonexistent/model')).rejects.toThrow(/no tokenizer.json there/)
  })
})
