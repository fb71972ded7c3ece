import { ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { nativePreTokenize } from '../../test/native-reference.js'
import { createPreTokenizer } from './create-pre-tokenizer.js'
import { preTokenize } from './pre-tokenizer.js'

const location = { source: 'tokenizer.json', path: ['pre_tokenizer'] }
const split = (pattern: string, behavior: string, invert = false) => ({ type: 'Split', pattern: { Regex: pattern }, behavior, invert })

/** The pre-tokenization patterns of real tokenizers (Hugging Face's `Split` regexes). */
export const realPatterns: Record<string, string> = {
  'GPT-2': "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
  'Llama 3': "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  'Qwen 2/3': "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  'GPT-4o':
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  'DeepSeek (CJK classes)': '[\\p{Han}\\p{Hiragana}\\p{Katakana}]+|\\p{N}{1,3}|[一-龥]+',
}

const preTokenizers: Record<string, unknown> = {
  'ByteLevel (GPT-2 regex, prefix space)': { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  'ByteLevel (no regex)': { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
  ...Object.fromEntries(Object.entries(realPatterns).map(([name, pattern]) => [`Split ${name}`, split(pattern, 'Isolated')])),
  'GPT-4o (Removed, inverted) + ByteLevel': {
    type: 'Sequence',
    pretokenizers: [split(realPatterns['GPT-4o']!, 'Removed', true), { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }],
  },
  'Split + ByteLevel with prefix space': {
    type: 'Sequence',
    pretokenizers: [split(realPatterns['Qwen 2/3']!, 'Isolated'), { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: false }],
  },
  'Split Removed': split('\\s+', 'Removed'),
  'Split MergedWithPrevious': split('[,.!?]', 'MergedWithPrevious'),
  'Split MergedWithNext': split('[,.!?]', 'MergedWithNext'),
  'Split Contiguous': split('[,.!?]', 'Contiguous'),
  'Split Contiguous inverted': split('[a-z]', 'Contiguous', true),
  'Split (string pattern)': { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithNext', invert: false },
  'Split \\d \\w \\h \\b': split('\\d+|\\w+|\\h|\\b', 'Isolated'),
  'Split anchors and dot': split('^.|.$|\\A\\w|\\z', 'Isolated'),
  'Split possessive and atomic': split('\\p{L}++|(?>\\s+)|\\p{N}{2}+', 'Isolated'),
  'Split empty matches, MergedWithNext': split('a|\\b', 'MergedWithNext'),
  'Split empty matches, MergedWithPrevious inverted': split('x*|\\b', 'MergedWithPrevious', true),
  'Split (?i) scripts and classes': split('(?i:[a-c]+|straße|σ)|\\p{Cyrillic}+|[[:punct:]]+', 'Isolated'),
  'Metaspace (always)': { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
  'Metaspace (first, no split)': { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false },
  'Metaspace (legacy add_prefix_space)': { type: 'Metaspace', replacement: '▁', add_prefix_space: true },
  'Metaspace (never)': { type: 'Metaspace', replacement: '▁', prepend_scheme: 'never', split: true },
  Whitespace: { type: 'Whitespace' },
  WhitespaceSplit: { type: 'WhitespaceSplit' },
  Punctuation: { type: 'Punctuation', behavior: 'Isolated' },
  'Punctuation (Contiguous)': { type: 'Punctuation', behavior: 'Contiguous' },
  Digits: { type: 'Digits', individual_digits: false },
  'Digits (individual)': { type: 'Digits', individual_digits: true },
  BertPreTokenizer: { type: 'BertPreTokenizer' },
  CharDelimiterSplit: { type: 'CharDelimiterSplit', delimiter: '|' },
  FixedLength: { type: 'FixedLength', length: 3 },
  UnicodeScripts: { type: 'UnicodeScripts' },
}

const texts = [
  "Hello world! I'm here, aren't you? I'M, YOU'RE, we'Ve",
  '  leading and trailing spaces  ',
  'tabs\tand\nnewlines\r\nand  \n  mixed\u0085next\ufeffbom\u00a0nbsp',
  'Numbers: 1 12 123 1234 12345 ١٢٣٤ ²³ Ⅻ',
  'CamelCaseWords and ALLCAPS and mIxEd and ǅungla',
  '中文文本，日本語のテキスト、한국어 Русский текст',
  'emoji 😀👩🏽‍🚀 flags 🇺🇸 and marks e\u0301 a\u0300',
  'punctuation... (brackets) [x] {y} "quotes" — dashes; a|b|c',
  'code: x=arr[i]+1; f(a,b) => {return a/b}',
  "'s 'S 'ſ 'K 'k straße STRASSE ς Σ σ",
  '▁already▁has▁metaspace',
  'どこで生れ。Yes Apples are りんご 林檎 ー グ 한국어abc Ελληνικά́ 123 ◌̰ ي\u{10FFFF}x',
  '',
  ' ',
]

describe('createPreTokenizer', () => {
  describe.each(Object.entries(preTokenizers))('%s', (_, json) => {
    const preTokenizer = createPreTokenizer(json, location)
    it.each(texts)('cuts %j as the Rust tokenizer', (text) => {
      expect(preTokenize(preTokenizer, text)).toEqual(nativePreTokenize(json, text))
    })
  })

  it('names an unsupported type and the supported ones', () => {
    expect(() => createPreTokenizer({ type: 'Scripts' }, location)).toThrow(
      /pre_tokenizer\.type: unsupported pre-tokenizer type 'Scripts'; supported: ByteLevel, Split/,
    )
  })

  it('gives the JSON path of a bad field, inside a Sequence', () => {
    try {
      createPreTokenizer({ type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: 'a' }, behavior: 'Sideways', invert: false }] }, location)
      expect.unreachable()
    } catch (error) {
      expect(ParseError.isInstance(error)).toBe(true)
      expect((error as ParseError).path).toEqual(['pre_tokenizer', 'pretokenizers', 0, 'behavior'])
    }
  })
})
