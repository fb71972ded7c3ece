import { InvalidArgumentError, ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { byteLevelBpeJson } from '../test/small-tokenizers.js'
import { loadTokenizer } from './load-tokenizer.js'
import { invertVocabulary } from './models/tokenizer-model.js'
import { Tokenizer } from './tokenizer.js'
import { defaultTokenizerLimits, TokenizerLimitError } from './tokenizer-limits.js'

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
    // Ids are checked as the file is read, before any table is built from them (the model's id → token table is
    // the only one sized by ids, and stays sparse for scattered ids: see the raised-limit test below).
    const error = parseErrorOf(() => Tokenizer.fromJSON(json))
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

  it('bounds the characters of the added tokens and of Unigram pieces, which go into character tries (2 × 4,000,000 took 4 s and 1.7 GB)', () => {
    const long = 'x'.repeat(4_000_000)
    const added = parseErrorOf(() =>
      Tokenizer.fromJSON(
        wordLevel(
          { a: 0 },
          {
            added_tokens: [
              { id: 1, content: long },
              { id: 2, content: `${long}y` },
            ],
          },
        ),
      ),
    )
    expect(added.path).toEqual(['added_tokens', 1, 'content']) // counted as the entries are read: the second one is refused
    expect(added.message).toMatch(/the added tokens up to here hold 8000001 characters, over the limit of 4000000 \(limits\.maxTokenCharacters\)/)
    const unigram = {
      model: {
        type: 'Unigram',
        unk_id: 0,
        vocab: [
          ['<unk>', 0],
          ['abcdef', -1],
          ['ghijkl', -2],
        ],
      },
    }
    const limits = { maxTokenCharacters: 12 }
    expect(parseErrorOf(() => Tokenizer.fromJSON(unigram, undefined, { limits })).path).toEqual(['model', 'vocab', 2, 0])
    expect(Tokenizer.fromJSON(unigram, undefined, { limits: { maxTokenCharacters: 17 } }).encode('abcdef')).toEqual(Int32Array.of(1))
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
    const tokenizer = Tokenizer.fromJSON(wordLevel({ a: 0, b: 2 ** 31 - 1 }, { added_tokens: [{ id: 1e9, content: '<x>' }] }), undefined, { limits })
    expect(tokenizer.vocabSize).toBe(2 ** 31)
    // The id → token table holds an entry per token, not per id: two entries for ids 0 and 100,000 (a dense one, 100,001).
    const table = invertVocabulary(
      new Map([
        ['a', 0],
        ['b', 100_000],
      ]),
    )
    expect([table.length, Object.keys(table).length, table[100_000]]).toEqual([100_001, 2, 'b'])
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

/** `depth` Sequences of `kind` nested in one another around `innermost`. */
function nested(type: string, itemsKey: string, depth: number, innermost: unknown): unknown {
  let json = innermost
  for (let level = 0; level < depth; level++) json = { type, [itemsKey]: [json] }
  return json
}

describe('Sequence nesting (maxSequenceDepth)', () => {
  const components = [
    ['normalizer', 'normalizers', { type: 'Lowercase' }],
    ['pre_tokenizer', 'pretokenizers', { type: 'WhitespaceSplit' }],
    ['post_processor', 'processors', { type: 'ByteLevel' }],
    ['decoder', 'decoders', { type: 'Fuse' }],
  ] as const

  it.each(components)('refuses %s Sequences nested 5,000 deep as a ParseError at the 33rd (was: a raw RangeError)', (field, itemsKey, innermost) => {
    const error = parseErrorOf(() => Tokenizer.fromJSON(wordLevel({ a: 0 }, { [field]: nested('Sequence', itemsKey, 5000, innermost) })))
    expect(error.path).toEqual([field, ...Array.from({ length: 32 }, () => [itemsKey, 0]).flat()])
    expect(error.message).toMatch(/Sequences nest 33 deep here, over the limit of 32 \(limits\.maxSequenceDepth\); raise it with/)
  })

  it.each(components)('builds %s Sequences 32 deep, and deeper with a raised limit', (field, itemsKey, innermost) => {
    expect(Tokenizer.fromJSON(wordLevel({ a: 0 }, { [field]: nested('Sequence', itemsKey, 32, innermost) })).encode('a a')).toEqual(Int32Array.of(0, 0))
    const deep = wordLevel({ a: 0 }, { [field]: nested('Sequence', itemsKey, 100, innermost) })
    expect(Tokenizer.fromJSON(deep, undefined, { limits: { maxSequenceDepth: 100, maxSequenceLength: 100 } }).decode([0, 0])).toMatch(/^a ?a$/)
  })
})

describe('Sequence length and growth (maxSequenceLength, maxSequenceGrowth)', () => {
  it('refuses a flat Sequence of 5,000 pre-tokenizers, which each call the next (was: RangeError in encode)', () => {
    const json = wordLevel({ a: 0 }, { pre_tokenizer: { type: 'Sequence', pretokenizers: Array.from({ length: 5000 }, () => ({ type: 'WhitespaceSplit' })) } })
    const error = parseErrorOf(() => Tokenizer.fromJSON(json))
    expect(error.path).toEqual(['pre_tokenizer', 'pretokenizers'])
    expect(error.message).toMatch(/a Sequence of more than 64 pre-tokenizers, nested Sequences included, is over the limit \(limits\.maxSequenceLength\)/)
  })

  it.each([
    ['pre_tokenizer', 'pretokenizers', { type: 'WhitespaceSplit' }],
    ['decoder', 'decoders', { type: 'ByteLevel' }],
    ['normalizer', 'normalizers', { type: 'NFC' }],
  ] as const)(
    'counts the components of nested %s Sequences together (40 × 40 ByteLevel decoders took 4 s to decode: found by the fuzz test)',
    (field, itemsKey, component) => {
      const square = {
        type: 'Sequence',
        [itemsKey]: Array.from({ length: 20 }, () => ({ type: 'Sequence', [itemsKey]: Array.from({ length: 20 }, () => component) })),
      }
      const error = parseErrorOf(() => Tokenizer.fromJSON(wordLevel({ a: 0 }, { [field]: square })))
      expect(error.path).toEqual([field, itemsKey])
      expect(error.message).toMatch(/a Sequence of more than 64 .*s, nested Sequences included/)
      expect(Tokenizer.fromJSON(wordLevel({ a: 0 }, { [field]: square }), undefined, { limits: { maxSequenceLength: 420 } }).decode([0, 0])).toMatch(/^a ?a$/)
    },
  )

  it('refuses a second ByteLevel pre-tokenizer, which would double the text each time', () => {
    const byteLevel = { type: 'ByteLevel', add_prefix_space: false, use_regex: false }
    const error = parseErrorOf(() => Tokenizer.fromJSON(wordLevel({ a: 0 }, { pre_tokenizer: { type: 'Sequence', pretokenizers: [byteLevel, byteLevel] } })))
    expect(error.path).toEqual(['pre_tokenizer'])
    expect(error.message).toMatch(/more than one ByteLevel pre-tokenizer/)
  })

  it.each([
    ['normalizer', 'normalizers', { type: 'Replace', pattern: { String: 'a' }, content: 'aa' }],
    ['normalizer', 'normalizers', { type: 'ByteLevel' }],
    ['decoder', 'decoders', { type: 'Replace', pattern: { String: 'a' }, content: 'aa' }],
  ] as const)('stops a %s Sequence that grows the text exponentially with a TokenizerLimitError (was: out of memory)', (field, itemsKey, component) => {
    const tokenizer = Tokenizer.fromJSON(wordLevel({ a: 0, é: 1 }, { [field]: { type: 'Sequence', [itemsKey]: Array.from({ length: 60 }, () => component) } }))
    // Doubling 60 times, unchecked, the text would pass any memory long before the end: a RangeError or a crash.
    let error: unknown
    try {
      if (field === 'normalizer') tokenizer.encode('aé'.repeat(1000))
      else tokenizer.decode(Array.from({ length: 1000 }, () => 0))
    } catch (caught) {
      error = caught
    }
    expect(TokenizerLimitError.isInstance(error)).toBe(true)
    expect((error as TokenizerLimitError).limit).toBe('maxSequenceGrowth')
    expect(String(error)).toMatch(
      new RegExp(`the ${itemsKey} of tokenizer\\.json at ${field} make a text of \\d+ code units \\d+ long: the growth \\(\\d+\\) is over the limit of 64`),
    )
  })

  it("lets real pipelines through: NFKC's longest expansion (18 characters) and Llama 2's Prepend + Replace", () => {
    const nfkc = Tokenizer.fromJSON(wordLevel({ a: 0 }, { normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Lowercase' }] } }))
    expect(nfkc.normalizer?.normalize('\u{fdfa}'.repeat(1000)).length).toBe(18_000)
    const llama2 = {
      type: 'Sequence',
      normalizers: [
        { type: 'Prepend', prepend: '▁' },
        { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
      ],
    }
    expect(Tokenizer.fromJSON(wordLevel({ a: 0 }, { normalizer: llama2 })).normalizer?.normalize('')).toBe('')
  })
})
