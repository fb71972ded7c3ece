import { ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { nativeEncode, nativeTokenizer, tokenizerJson } from '../../test/native-reference.js'
import { Tokenizer } from '../tokenizer.js'
import { createTokenizerModel } from './create-tokenizer-model.js'

const location = { source: 'tokenizer.json', path: ['model'] }

const bpe = (fields: Record<string, unknown>) => ({
  type: 'BPE',
  dropout: null,
  unk_token: null,
  continuing_subword_prefix: null,
  end_of_word_suffix: null,
  fuse_unk: false,
  byte_fallback: false,
  ignore_merges: false,
  ...fields,
})

/** Hugging Face's own model tests (`unrelated`, unknown tokens fused or not, `##` prefix) and the other options. */
const unrelated = {
  vocab: { u: 0, n: 1, r: 2, e: 3, l: 4, a: 5, t: 6, d: 7, re: 8, at: 9, ed: 10, un: 11, ated: 12, rel: 13, related: 14, unrelated: 15, '<unk>': 16 },
  merges: ['r e', 'a t', 'e d', 'u n', 'at ed', 're l', 'rel ated', 'un related'],
}
const byteFallbackVocab: Record<string, number> = { '<unk>': 0, a: 1, b: 2, ab: 3 }
for (let byte = 0; byte < 256; byte++) byteFallbackVocab[`<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`] = 4 + byte

const models: Record<string, [unknown, string[]]> = {
  'BPE (merges by rank)': [bpe(unrelated), ['unrelated', 'related', 'unre', 'ated', 'aaa', 'u n r e']],
  'BPE (unknown, not fused)': [bpe({ ...unrelated, unk_token: '<unk>' }), ['c', 'cc', 'accb', 'unrelatedxyz']],
  'BPE (unknown, fused)': [bpe({ ...unrelated, unk_token: '<unk>', fuse_unk: true }), ['c', 'cc', 'accb', 'xxunrelatedyy']],
  'BPE (no unknown token: dropped)': [bpe(unrelated), ['xuy', 'unrelated!']],
  'BPE (continuing subword prefix)': [
    bpe({
      vocab: { a: 0, '##b': 1, '##c': 2, ab: 3, abc: 4, '[UNK]': 5 },
      merges: [
        ['a', '##b'],
        ['ab', '##c'],
      ],
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
    }),
    ['ab', 'abc', 'ba', 'a'],
  ],
  'BPE (end of word suffix)': [
    bpe({
      vocab: { a: 0, b: 1, 'b</w>': 2, 'ab</w>': 3, ab: 4 },
      merges: [
        ['a', 'b</w>'],
        ['a', 'b'],
      ],
      end_of_word_suffix: '</w>',
    }),
    ['ab', 'abab', 'ba'],
  ],
  'BPE (byte fallback)': [bpe({ vocab: byteFallbackVocab, merges: ['a b'], unk_token: '<unk>', byte_fallback: true }), ['ab', 'abc', 'a€b', '😀', 'ba']],
  'BPE (ignore merges)': [
    bpe({ vocab: { ...unrelated.vocab, unrelatedness: 17 }, merges: unrelated.merges, ignore_merges: true }),
    ['unrelated', 'related', 'unrelatedness', 'unrel'],
  ],
  WordPiece: [
    {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 10,
      vocab: { '[UNK]': 0, un: 1, '##aff': 2, '##able': 3, aff: 4, able: 5, '##a': 6 },
    },
    ['unaffable', 'affable', 'unaff', 'unx', 'aaaaaaaaaaaa', 'una'],
  ],
  WordLevel: [{ type: 'WordLevel', unk_token: '<unk>', vocab: { '<unk>': 0, hello: 1, world: 2 } }, ['hello', 'world', 'other']],
  Unigram: [
    {
      type: 'Unigram',
      unk_id: 0,
      byte_fallback: false,
      vocab: [
        ['<unk>', 0],
        ['a', -1],
        ['b', -2],
        ['ab', -2.5],
        ['c', -3],
        ['abc', -6],
        ['bc', -3.5],
        ['▁', -1.5],
        ['▁a', -2],
      ],
    },
    ['abc', 'ab', 'ba', 'cab', 'xyz', 'axbyc', '▁ab▁c', 'a😀b'],
  ],
  'Unigram (byte fallback)': [
    {
      type: 'Unigram',
      unk_id: 0,
      byte_fallback: true,
      vocab: [
        ['<unk>', 0],
        ['a', -1],
        ['b', -2],
        ...Object.keys(byteFallbackVocab)
          .filter((token) => token.startsWith('<0x'))
          .map((token) => [token, -10]),
      ],
    },
    ['ab', 'aéb', 'x'],
  ],
}

describe('createTokenizerModel', () => {
  describe.each(Object.entries(models))('%s', (_, [model, texts]) => {
    const json = tokenizerJson({ model })
    const ours = Tokenizer.fromJSON(json)
    const reference = nativeTokenizer(json)
    it.each(texts)('encodes %j as the Rust tokenizer', async (text) => {
      expect(Array.from(ours.encode(text))).toEqual(await nativeEncode(reference, text))
    })
  })

  it('reads merges written as pairs and as "a b" strings alike', () => {
    const asPairs = createTokenizerModel(bpe({ ...unrelated, merges: unrelated.merges.map((merge) => merge.split(' ')) }), location)
    const asStrings = createTokenizerModel(bpe(unrelated), location)
    expect(Array.from(asPairs.tokenize('unrelated'))).toEqual(Array.from(asStrings.tokenize('unrelated')))
  })

  it('infers the type of a model written without one', () => {
    const { type: _, ...untyped } = bpe(unrelated)
    expect(Array.from(createTokenizerModel(untyped, location).tokenize('unrelated'))).toEqual([15])
  })

  it.each([
    [bpe({ vocab: { a: 0 }, merges: ['a b'] }), ['model', 'merges', 0], /merge 0 needs the token "b"/],
    [bpe({ vocab: { a: 0, b: 1 }, merges: ['a b c'] }), ['model', 'merges', 0], /two tokens separated by one space/],
    [bpe({ vocab: { a: -1 }, merges: [] }), ['model', 'vocab', 'a'], /non-negative integer/],
    [bpe({ vocab: {}, merges: [], dropout: 0.1 }), ['model', 'dropout'], /dropout is not supported/],
    [{ type: 'Unigram', unk_id: 5, vocab: [['a', 0]] }, ['model', 'unk_id'], /outside the vocabulary/],
    [{ type: 'Unigram', vocab: [['a', 'x']] }, ['model', 'vocab', 0, 1], /number/],
  ])('gives a ParseError at the bad field (%#)', (json, path, message) => {
    try {
      createTokenizerModel(json, location)
      expect.unreachable()
    } catch (error) {
      expect(ParseError.isInstance(error)).toBe(true)
      expect((error as ParseError).path).toEqual(path)
      expect((error as ParseError).message).toMatch(message)
    }
  })

  it('describes a bad id shortly, even a value nested thousands deep (JSON.stringify overflowed the stack: found by the fuzz test)', () => {
    let deep: unknown = 1
    for (let level = 0; level < 5000; level++) deep = { type: 'Sequence', normalizers: [deep] }
    for (const id of [deep, Array.from({ length: 1000 }, () => [1])]) {
      const error = (() => {
        try {
          createTokenizerModel(bpe({ vocab: { a: id }, merges: [] }), location)
        } catch (caught) {
          return caught
        }
      })()
      expect(ParseError.isInstance(error), String(error)).toBe(true)
      expect((error as ParseError).path).toEqual(['model', 'vocab', 'a'])
      expect((error as ParseError).message.length).toBeLessThan(200)
    }
  })

  it.each([
    [
      'BPE',
      bpe({ vocab: { a: 0 }, merges: [], unk_token: '<unk>' }),
      'unk_token',
      /the unknown token "<unk>" is not in the vocabulary, and the text has a character no token covers/,
    ],
    ['WordPiece', { type: 'WordPiece', vocab: { a: 0 }, unk_token: '[UNK]' }, 'unk_token', /the unknown token "\[UNK\]" is not in the vocabulary/],
    ['WordLevel', { type: 'WordLevel', vocab: { a: 0 }, unk_token: '<unk>' }, 'unk_token', /the unknown token "<unk>" is not in the vocabulary/],
    ['Unigram', { type: 'Unigram', unk_id: null, vocab: [['a', -1]] }, 'unk_id', /the model has no unknown token \(unk_id\)/],
  ])(
    '%s: a text that needs an unknown token the model lacks is a ParseError at model.%s (was a plain Error: found by the fuzz test)',
    (_, json, field, message) => {
      const tokenizer = Tokenizer.fromJSON(tokenizerJson({ model: json }))
      expect(Array.from(tokenizer.encode('a'))).toEqual([0])
      let error: unknown
      try {
        tokenizer.encode('ab')
      } catch (caught) {
        error = caught
      }
      expect(ParseError.isInstance(error), String(error)).toBe(true)
      expect((error as ParseError).path).toEqual(['model', field])
      expect((error as ParseError).message).toMatch(message)
    },
  )

  it('names an unsupported type and the supported ones', () => {
    expect(() => createTokenizerModel({ type: 'Magic' }, location)).toThrow(
      /model\.type: unsupported model type 'Magic'; supported: BPE, WordPiece, WordLevel, Unigram/,
    )
  })
})
