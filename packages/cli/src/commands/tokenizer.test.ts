import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadTokenizer } from '@ludic/tokenizer'
import { describe, expect, it } from 'vitest'
import { runCli } from '../cli.js'
import { exitCodes } from '../errors.js'
import { captureIo, plainChatTemplate, useBackendAndDirectory } from '../test/support.js'
import type { TokenizerTrainSummary } from './tokenizer.js'

const temporaryDirectory = useBackendAndDirectory('ludic-cli-tokenizer-')

describe('ludic tokenizer train', () => {
  it('writes tokenizer.json and tokenizer_config.json that loadTokenizer reads back and that round-trip text', async () => {
    const directory = temporaryDirectory()
    const lines = ['the cat sat on the mat', 'the dog sat on the log', 'café ☕ and naïve résumé', 'the cat and the dog']
    await writeFile(join(directory, 'corpus.txt'), `${lines.join('\n')}\n`)
    await writeFile(join(directory, 'template.jinja'), plainChatTemplate)
    const { io, stdout } = captureIo({ cwd: directory })
    const argv = ['--json', 'tokenizer', 'train', '--input', 'corpus.txt', '--vocab-size', '300', '--eos', '<|end|>', '--chat-template', 'template.jinja']
    expect(await runCli([...argv, '--out', 'tok'], io)).toBe(exitCodes.ok)
    const summary = JSON.parse(stdout()) as TokenizerTrainSummary
    expect(summary).toMatchObject({ directory: join(directory, 'tok'), texts: 4 })
    expect(summary.merges).toBe(summary.vocabSize - 257) // 256 bytes, the end token, one token per merge
    const tokenizer = await loadTokenizer(summary.directory)
    for (const text of [...lines, 'an unseen sentence, with ünïcödé']) {
      expect(tokenizer.decode(tokenizer.encode(text, { addSpecialTokens: false }))).toBe(text)
    }
    expect(tokenizer.encode('the cat', { addSpecialTokens: false }).length).toBeLessThan('the cat'.length) // merges learned
    expect(tokenizer.idToToken(tokenizer.eosTokenId!)).toBe('<|end|>')
    expect(tokenizer.applyChatTemplate([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true })).toBe('user: hi\nassistant:')
    expect(JSON.parse(await readFile(join(summary.directory, 'tokenizer_config.json'), 'utf8'))).toMatchObject({ eos_token: '<|end|>' })
  })

  it('refuses a vocabulary too small for the bytes (2) and a missing input (3)', async () => {
    const directory = temporaryDirectory()
    await writeFile(join(directory, 'small.txt'), 'abc\n')
    const small = captureIo({ cwd: directory })
    expect(await runCli(['tokenizer', 'train', '--input', 'small.txt', '--vocab-size', '100', '--out', 'x'], small.io)).toBe(exitCodes.usage)
    expect(small.stderr()).toContain("Invalid argument 'options.vocabSize' (value: 100): must be at least 256")
    expect(small.stderr()).not.toContain('"code": "custom"') // the zod issue is in the message, not printed again as JSON
    const missing = captureIo({ cwd: directory })
    expect(await runCli(['tokenizer', 'train', '--input', 'nowhere.txt', '--vocab-size', '300', '--out', 'x'], missing.io)).toBe(exitCodes.notFound)
  })
})
