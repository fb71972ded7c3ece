import { InvalidArgumentError, ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { byteLevelBpeJson } from '../test/small-tokenizers.js'
import { loadTokenizer } from './load-tokenizer.js'
import { Tokenizer } from './tokenizer.js'
import { defaultTokenizerLimits } from './tokenizer-limits.js'

function parseErrorOf(call: () => unknown): ParseError {
  try {
    call()
  } catch (error) {
    if (ParseError.isInstance(error)) return error
    throw error
  }
  throw new Error('expected a ParseError')
}

const wordLevel = (vocab: Record<string, number>, fields: Record<string, unknown> = {}) => ({
  model: { type: 'WordLevel', vocab, unk_token: 'a' },
  pre_tokenizer: { type: 'WhitespaceSplit' },
  ...fields,
})

describe('token id limits (maxVocabularySize)', () => {
  it('defaults to 2^24 ids, which real vocabularies are far below', () => {
    expect(defaultTokenizerLimits.maxVocabularySize).toBe(2 ** 24)
    expect(Tokenizer.fromJSON(byteLevelBpeJson({ extraTokens: ['hello'] })).vocabSize).toBe(260)
  })

  it.each([
    ['a vocabulary id of 1e9 (was: V8 out of memory)', wordLevel({ a: 0, b: 1e9 }), ['model', 'vocab', 'b'], 1e9],
    [
      'an added token id of 1e9 (was: vocabSize 1,000,000,001)',
      wordLevel({ a: 0 }, { added_tokens: [{ id: 1e9, content: '<x>' }] }),
      ['added_tokens', 0, 'id'],
      1e9,
    ],
    ['an id just at the limit', wordLevel({ a: 0, b: 2 ** 24 }), ['model', 'vocab', 'b'], 2 ** 24],
    [
      'a TemplateProcessing special token id',
      wordLevel(
        { a: 0 },
        {
          post_processor: {
            type: 'TemplateProcessing',
            single: [{ SpecialToken: { id: '<s>' } }, { Sequence: { id: 'A' } }],
            special_tokens: { '<s>': { id: '<s>', ids: [1, 3e9], tokens: ['<s>', '<s>'] } },
          },
        },
      ),
      ['post_processor', 'special_tokens', '<s>', 'ids', 1],
      3e9,
    ],
    [
      'a BertProcessing id',
      wordLevel({ a: 0 }, { post_processor: { type: 'BertProcessing', cls: ['[CLS]', 1], sep: ['[SEP]', 2 ** 40] } }),
      ['post_processor', 'sep', 1],
      2 ** 40,
    ],
    [
      'a RobertaProcessing id in a Sequence',
      wordLevel({ a: 0 }, { post_processor: { type: 'Sequence', processors: [{ type: 'RobertaProcessing', cls: ['<s>', 2 ** 30], sep: ['</s>', 2] }] } }),
      ['post_processor', 'processors', 0, 'cls', 1],
      2 ** 30,
    ],
    ['a padding id', wordLevel({ a: 0 }, { padding: { strategy: 'BatchLongest', pad_id: 1e12, pad_token: '<pad>' } }), ['padding', 'pad_id'], 1e12],
  ])('refuses %s before allocating, as a ParseError naming the location and the value', (_, json, path, value) => {
    const started = performance.now()
    const error = parseErrorOf(() => Tokenizer.fromJSON(json))
    expect(performance.now() - started).toBeLessThan(1000)
    expect(error.source).toBe('tokenizer.json')
    expect(error.path).toEqual(path)
    expect(error.message).toContain(`the token id ${value} is not below the limit of ${2 ** 24} ids (limits.maxVocabularySize)`)
    expect(error.message).toMatch(/raise it with the limits\.maxVocabularySize option of loadTokenizer or Tokenizer\.fromJSON/)
  })

  it('refuses a Unigram vocabulary longer than the limit, and scores that are not finite (JSON 1e999 reads as Infinity)', () => {
    const unigram = (vocab: unknown[]) => ({ model: { type: 'Unigram', unk_id: 0, vocab } })
    const tooMany = parseErrorOf(() =>
      Tokenizer.fromJSON(
        unigram([
          ['a', -1],
          ['b', -2],
          ['c', -3],
        ]),
        undefined,
        { limits: { maxVocabularySize: 2 } },
      ),
    )
    expect(tooMany.path).toEqual(['model', 'vocab'])
    expect(tooMany.message).toMatch(/3 tokens are over the limit of 2 \(limits\.maxVocabularySize\)/)
    const infinite = parseErrorOf(() => Tokenizer.fromJSON(JSON.parse('{"model":{"type":"Unigram","unk_id":0,"vocab":[["a",-1],["b",1e999]]}}')))
    expect(infinite.path).toEqual(['model', 'vocab', 1, 1])
  })

  it('checks the numbers of truncation and padding, which it otherwise ignores', () => {
    expect(parseErrorOf(() => Tokenizer.fromJSON(wordLevel({ a: 0 }, { truncation: { max_length: -1 } }))).path).toEqual(['truncation', 'max_length'])
    expect(parseErrorOf(() => Tokenizer.fromJSON(wordLevel({ a: 0 }, { padding: { strategy: { Fixed: 1.5 } } }))).path).toEqual(['padding', 'strategy'])
    const bert = {
      truncation: { direction: 'Right', max_length: 512, strategy: 'LongestFirst', stride: 0 },
      padding: { strategy: { Fixed: 512 }, direction: 'Right', pad_to_multiple_of: null, pad_id: 0, pad_type_id: 0, pad_token: '[PAD]' },
    }
    expect(Tokenizer.fromJSON(wordLevel({ a: 0 }, bert)).vocabSize).toBe(1)
  })

  it('takes a raised limit; the id table then follows the number of tokens, not the largest id', async () => {
    const limits = { maxVocabularySize: 2 ** 31 }
    const started = performance.now()
    const tokenizer = Tokenizer.fromJSON(wordLevel({ a: 0, b: 2 ** 31 - 1 }, { added_tokens: [{ id: 1e9, content: '<x>' }] }), undefined, { limits })
    expect(performance.now() - started).toBeLessThan(1000)
    expect(tokenizer.vocabSize).toBe(2 ** 31)
    expect(tokenizer.limits.maxVocabularySize).toBe(2 ** 31)
    expect(tokenizer.decode([0, 2 ** 31 - 1, 1e9])).toBe('a b <x>')
    const loaded = await loadTokenizer({ tokenizer: wordLevel({ a: 0 }, { added_tokens: [{ id: 1e9, content: '<x>' }] }) }, { limits })
    expect(loaded.vocabSize).toBe(1e9 + 1)
    await expect(loadTokenizer({ tokenizer: wordLevel({ a: 0 }, { added_tokens: [{ id: 1e9, content: '<x>' }] }) })).rejects.toThrow(
      /added_tokens\[0\]\.id: the token id 1000000000 is not below/,
    )
  })

  it('refuses limits that are not positive integers, or ids past 32 bits', () => {
    expect(() => Tokenizer.fromJSON(wordLevel({ a: 0 }), undefined, { limits: { maxVocabularySize: 0 } })).toThrow(InvalidArgumentError)
    expect(() => Tokenizer.fromJSON(wordLevel({ a: 0 }), undefined, { limits: { maxVocabularySize: 2 ** 32 } })).toThrow(/options\.limits\.maxVocabularySize/)
  })
})
