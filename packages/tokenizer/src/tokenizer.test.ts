import { InvalidArgumentError, ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { nativeEncode, nativeTokenizer } from '../test/native-reference.js'
import { byteLevelBpeJson } from '../test/small-tokenizers.js'
import { Tokenizer } from './tokenizer.js'

function parseErrorOf(call: () => unknown): ParseError {
  try {
    call()
  } catch (error) {
    if (ParseError.isInstance(error)) return error
    throw error
  }
  throw new Error('expected a ParseError')
}

describe('Tokenizer.fromJSON', () => {
  it.each([
    [
      {
        ...byteLevelBpeJson(),
        added_tokens: [
          { id: 300, content: 'ok' },
          { id: 301, content: 5 },
        ],
      },
      ['added_tokens', 1, 'content'],
    ],
    [{ ...byteLevelBpeJson(), model: undefined }, ['model']],
    [
      { ...byteLevelBpeJson(), normalizer: { type: 'Sequence', normalizers: [{ type: 'Strip', strip_left: 'yes' }] } },
      ['normalizer', 'normalizers', 0, 'strip_left'],
    ],
    [{ ...byteLevelBpeJson(), decoder: { type: 'Strip', content: 'ab', start: 1, stop: 0 } }, ['decoder', 'content']],
    [
      { ...byteLevelBpeJson(), pre_tokenizer: { type: 'Split', pattern: { Regex: '(?<name>a)\\k<name>' }, behavior: 'Isolated' } },
      ['pre_tokenizer', 'pattern', 'Regex'],
    ],
    [{ ...byteLevelBpeJson(), post_processor: { type: 'TemplateProcessing', single: [{ Sequence: { id: 'C' } }] } }, ['post_processor', 'single', 0]],
  ])('gives a ParseError with the JSON path of the bad field (%#)', (json, path) => {
    const error = parseErrorOf(() => Tokenizer.fromJSON(json))
    expect(error.source).toBe('tokenizer.json')
    expect(error.path).toEqual(path)
  })

  it('names an unknown component type and the supported ones', () => {
    const error = parseErrorOf(() => Tokenizer.fromJSON({ ...byteLevelBpeJson(), normalizer: { type: 'Magic' } }))
    expect(error.path).toEqual(['normalizer', 'type'])
    expect(error.message).toMatch(/unsupported normalizer type 'Magic'; supported: NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace, Prepend/)
  })

  it('checks tokenizer_config.json too', () => {
    const error = parseErrorOf(() => Tokenizer.fromJSON(byteLevelBpeJson(), { chat_template: 42 }))
    expect(error.source).toBe('tokenizer_config.json')
    expect(error.path).toEqual(['chat_template'])
  })
})

describe('Tokenizer pipelines', () => {
  it('encodes with pre-tokenizers that share a pattern in one Sequence as the Rust tokenizer (it looped forever)', async () => {
    // BertPreTokenizer and Punctuation share one RegExp, as do two Digits: a later step ran it while an earlier one was between matches.
    const vocab = Object.fromEntries(['[UNK]', 'hello', 'world', '!', ',', '1', '2', 'a', 'b'].map((token, id) => [token, id]))
    const json = {
      model: { type: 'WordLevel', vocab, unk_token: '[UNK]' },
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [
          { type: 'BertPreTokenizer' },
          { type: 'Punctuation', behavior: 'Isolated' },
          { type: 'BertPreTokenizer' },
          { type: 'Digits', individual_digits: true },
          { type: 'Digits', individual_digits: true },
        ],
      },
    }
    const tokenizer = Tokenizer.fromJSON(json)
    const reference = nativeTokenizer(json)
    for (const text of ['hello, world!', 'a b 12 b!a', ' 1,2 ,, hello '])
      expect(Array.from(tokenizer.encode(text))).toEqual(await nativeEncode(reference, text))
  })
})

describe('Tokenizer arguments', () => {
  const tokenizer = Tokenizer.fromJSON(byteLevelBpeJson())

  it('refuses a text that is not a string', () => {
    expect(() => tokenizer.encode(42 as unknown as string)).toThrow(InvalidArgumentError)
  })

  it('refuses bad options', () => {
    expect(() => tokenizer.encode('x', { addSpecialTokens: 'yes' as unknown as boolean })).toThrow(/options\.addSpecialTokens/)
    expect(() => tokenizer.decode([1], { skipSpecialTokens: 1 as unknown as boolean })).toThrow(/options\.skipSpecialTokens/)
  })

  it('refuses ids that are not non-negative integers, naming the first', () => {
    expect(() => tokenizer.decode([1, 2, -3])).toThrow(/ids\[2\].*-3/)
    expect(() => tokenizer.decode([1, 1.5])).toThrow(/ids\[1\]/)
    expect(() => tokenizer.decode(Int32Array.of(5, -1))).toThrow(/ids\[1\]/)
  })

  it('skips ids outside the vocabulary, as the Rust tokenizer', async () => {
    const reference = nativeTokenizer(byteLevelBpeJson())
    expect(tokenizer.decode([72, 100_000, 105])).toBe(await reference.decode([72, 100_000, 105], false))
  })

  it('caches the pieces it encodes (cachedPieces), up to 256 characters each; clearCache empties it', () => {
    const cached = Tokenizer.fromJSON(byteLevelBpeJson())
    expect(cached.cachedPieces).toBe(0)
    cached.encode('hello hello world')
    expect(cached.cachedPieces).toBe(3) // "hello", " hello", " world"
    cached.encode('x'.repeat(300)) // one piece of 300 characters: never cached
    expect(cached.cachedPieces).toBe(3)
    cached.clearCache()
    expect(cached.cachedPieces).toBe(0)
  })

  it('encodes lone surrogates as U+FFFD, as the Rust tokenizer sees them', async () => {
    const reference = nativeTokenizer(byteLevelBpeJson())
    for (const text of ['a\ud800b', '\udc00', 'x\ud83d']) expect(Array.from(tokenizer.encode(text))).toEqual(await nativeEncode(reference, text))
  })
})
