import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ParseError, type PreferencePair } from '@ludic/core'
import { createByteTokenizer } from '@ludic/core/test'
import { describe, expect, it } from 'vitest'
import { encodePreferencePair, truncatePreferencePair } from './preference-data.js'
import { readPreferencePairs } from './preference-file.js'
import { useBackendAndDirectory } from './test/support.js'

const tokenizer = createByteTokenizer()
const eos = tokenizer.eosTokenId!
const bytes = (text: string): number[] => [...new TextEncoder().encode(text)]
const directory = useBackendAndDirectory('ludic-preference-data-')

describe('encodePreferencePair', () => {
  it('encodes the standard format: each text alone, no special tokens, EOS after each response', () => {
    const encoded = encodePreferencePair({ prompt: 'Q: 2+2?', chosen: ' 4', rejected: ' 5' }, { tokenizer })
    expect([...encoded.promptIds]).toEqual(bytes('Q: 2+2?'))
    expect([...encoded.chosenIds]).toEqual([...bytes(' 4'), eos])
    expect([...encoded.rejectedIds]).toEqual([...bytes(' 5'), eos])
    expect([...encodePreferencePair({ prompt: 'Q', chosen: 'a', rejected: 'b' }, { tokenizer, appendEos: false }).chosenIds]).toEqual(bytes('a'))
  })

  it('renders conversational pairs with the chat template: the response is the rendering past the prompt', () => {
    const pair: PreferencePair = {
      prompt: [{ role: 'user', content: 'hi' }],
      chosen: [{ role: 'assistant', content: 'hello' }],
      rejected: [{ role: 'assistant', content: 'go away' }],
    }
    const encoded = encodePreferencePair(pair, { tokenizer })
    // The byte tokenizer renders `role: content\n` and the generation prompt `assistant: `.
    expect(tokenizer.decode(encoded.promptIds)).toBe('user: hi\nassistant: ')
    expect(tokenizer.decode(encoded.chosenIds)).toBe('hello\n<eos>')
    expect(tokenizer.decode(encoded.rejectedIds)).toBe('go away\n<eos>')
    // A given template replaces the tokenizer's.
    const custom = encodePreferencePair(pair, {
      tokenizer,
      chatTemplate: (messages, { addGenerationPrompt }) =>
        messages.map((message) => `<${message.role}>${message.content}`).join('') + (addGenerationPrompt ? '<assistant>' : ''),
    })
    expect(tokenizer.decode(custom.promptIds)).toBe('<user>hi<assistant>')
    expect(tokenizer.decode(custom.chosenIds)).toBe('hello<eos>')
    // 'hi|hello' does not start with 'hi>': the response cannot be split off.
    expect(() =>
      encodePreferencePair(pair, {
        tokenizer,
        chatTemplate: (messages, { addGenerationPrompt }) => messages.map((m) => m.content).join('|') + (addGenerationPrompt ? '>' : ''),
      }),
    ).toThrow(/pair\.chosen.*cannot be split from the prompt/)
  })

  it('takes the implicit prompt: the longest shared leading messages, or the common prefix of texts', () => {
    const user = { role: 'user' as const, content: 'hi' }
    const implicit = encodePreferencePair(
      { chosen: [user, { role: 'assistant', content: 'hello' }], rejected: [user, { role: 'assistant', content: 'bye' }] },
      { tokenizer },
    )
    expect(tokenizer.decode(implicit.promptIds)).toBe('user: hi\nassistant: ')
    expect(tokenizer.decode(implicit.chosenIds)).toBe('hello\n<eos>')
    // Texts: the space before the split goes with the responses (core's splitPreferencePair, as TRL's extract_prompt).
    const text = encodePreferencePair({ chosen: 'The sky is blue', rejected: 'The sky is green' }, { tokenizer })
    expect([...text.promptIds]).toEqual(bytes('The sky is'))
    expect([...text.chosenIds]).toEqual([...bytes(' blue'), eos])
    expect(() => encodePreferencePair({ chosen: 'yes', rejected: 'no' }, { tokenizer, argument: 'pairs[3]' })).toThrow(/pairs\[3\]\.prompt.*share no leading/)
  })

  it('rejects mixed formats, naming the field', () => {
    expect(() => encodePreferencePair({ prompt: 'Q', chosen: [{ role: 'assistant', content: 'a' }], rejected: 'b' }, { tokenizer })).toThrow(
      /pair\.chosen.*must be a text when the prompt is a text/,
    )
    expect(() => encodePreferencePair({ prompt: [{ role: 'user', content: 'Q' }], chosen: 'a', rejected: 'b' }, { tokenizer })).toThrow(
      /pair\.chosen.*must be messages/,
    )
  })

  it('stands BOS for an empty prompt', () => {
    expect([...encodePreferencePair({ prompt: '', chosen: 'a', rejected: 'b' }, { tokenizer }).promptIds]).toEqual([tokenizer.bosTokenId])
  })
})

describe('truncatePreferencePair', () => {
  const ids = (length: number, start: number): Int32Array => Int32Array.from({ length }, (_, index) => start + index)
  it('keeps pairs that fit', () => {
    const pair = { promptIds: ids(4, 0), chosenIds: ids(3, 10), rejectedIds: ids(2, 20) }
    expect(truncatePreferencePair(pair, 7, 3)).toBe(pair)
  })
  it('cuts the prompt from the left down to maxPromptLength, then the responses from the right', () => {
    const pair = { promptIds: ids(6, 0), chosenIds: ids(5, 10), rejectedIds: ids(2, 20) }
    // 6 + 5 > 8: the prompt keeps max(8 − 5, 4) = 4 tokens (its end), the responses 8 − 4 = 4 (their start).
    const cut = truncatePreferencePair(pair, 8, 4)
    expect([...cut.promptIds]).toEqual([2, 3, 4, 5])
    expect([...cut.chosenIds]).toEqual([10, 11, 12, 13])
    expect([...cut.rejectedIds]).toEqual([20, 21])
    // Room for the whole response: only the prompt is cut.
    const promptOnly = truncatePreferencePair(pair, 9, 2)
    expect([...promptOnly.promptIds]).toEqual([2, 3, 4, 5])
    expect(promptOnly.chosenIds.length).toBe(5)
  })
})

describe('readPreferencePairs', () => {
  it('reads JSON Lines in TRL formats and names a bad line', async () => {
    const path = join(directory(), 'pairs.jsonl')
    await writeFile(path, `${JSON.stringify({ prompt: 'Q', chosen: 'a', rejected: 'b', margin: 1 })}\n\n${JSON.stringify({ chosen: 'Qa', rejected: 'Qb' })}\n`)
    expect(await readPreferencePairs(path)).toEqual([
      { prompt: 'Q', chosen: 'a', rejected: 'b', margin: 1 },
      { chosen: 'Qa', rejected: 'Qb' },
    ])
    const bad = join(directory(), 'bad.jsonl')
    await writeFile(bad, `${JSON.stringify({ prompt: 'Q', chosen: 'a', rejected: 'b' })}\n${JSON.stringify({ prompt: 'Q', chosen: 3, rejected: 'b' })}\n`)
    const error = await readPreferencePairs(bad).catch((caught: unknown) => caught)
    expect(ParseError.isInstance(error)).toBe(true)
    expect((error as Error).message).toMatch(/line 2.*chosen/)
    // Bounded before reading: a file far over maxCharacters is refused by its size.
    await expect(readPreferencePairs(path, { maxCharacters: 10 })).rejects.toThrow(/limit/)
  })
})
