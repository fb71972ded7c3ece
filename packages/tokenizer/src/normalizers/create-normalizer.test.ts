import { ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { nativeNormalize } from '../../test/native-reference.js'
import { createNormalizer } from './create-normalizer.js'

const location = { source: 'tokenizer.json', path: ['normalizer'] }

const normalizers: Record<string, unknown> = {
  NFC: { type: 'NFC' },
  NFD: { type: 'NFD' },
  NFKC: { type: 'NFKC' },
  NFKD: { type: 'NFKD' },
  Lowercase: { type: 'Lowercase' },
  Strip: { type: 'Strip', strip_left: true, strip_right: true },
  'Strip left only': { type: 'Strip', strip_left: true, strip_right: false },
  StripAccents: { type: 'StripAccents' },
  'NFD + StripAccents': { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'StripAccents' }] },
  'Replace (string)': { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
  'Replace (regex)': { type: 'Replace', pattern: { Regex: '\\s+' }, content: ' ' },
  'Replace (regex, $ in content)': { type: 'Replace', pattern: { Regex: '[0-9]' }, content: '$&' },
  Prepend: { type: 'Prepend', prepend: '▁' },
  'Llama 2 (Prepend + Replace)': {
    type: 'Sequence',
    normalizers: [
      { type: 'Prepend', prepend: '▁' },
      { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
    ],
  },
  BertNormalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
  'BertNormalizer (cased)': { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: false },
  Nmt: { type: 'Nmt' },
  ByteLevel: { type: 'ByteLevel' },
}

const texts = [
  'Hello World',
  '  padded\t\n',
  '\u0085 next line and BOM \ufeff',
  'Café naïve Ångström ﬁ ㎏ Ⅻ ２３',
  'e\u0301 vs é',
  'ΣΊΣΥΦΟΣ ΟΔΟΣ Σ',
  'İstanbul ẞ ǅ',
  '中文 and 日本語 text',
  'ctrl\u0001\u0007\u000b\u001f\u007f\u008f x\u200by\u00adz\ufffd',
  'a  b   c 1 2 3',
  '',
  '😀 👩🏽‍🚀',
]

describe('createNormalizer', () => {
  describe.each(Object.entries(normalizers))('%s', (_, json) => {
    const normalizer = createNormalizer(json, location)
    it.each(texts)('normalizes %j as the Rust tokenizer', (text) => {
      expect(normalizer.normalize(text)).toBe(nativeNormalize(json, text))
    })
  })

  it('names an unsupported type and the supported ones', () => {
    const call = () => createNormalizer({ type: 'Magic' }, location)
    expect(call).toThrow(ParseError)
    expect(call).toThrow(/normalizer\.type: unsupported normalizer type 'Magic'; supported: NFC, NFD, NFKC, NFKD, Lowercase/)
  })

  it('gives the JSON path of a bad field, inside a Sequence', () => {
    try {
      createNormalizer({ type: 'Sequence', normalizers: [{ type: 'NFC' }, { type: 'Replace', pattern: { Regex: '(' }, content: 1 }] }, location)
      expect.unreachable()
    } catch (error) {
      expect(ParseError.isInstance(error)).toBe(true)
      expect((error as ParseError).path).toEqual(['normalizer', 'normalizers', 1, 'content'])
    }
  })

  it('reports a pattern it cannot translate at the pattern', () => {
    expect(() => createNormalizer({ type: 'Replace', pattern: { Regex: '\\G' }, content: '' }, location)).toThrow(
      /normalizer\.pattern\.Regex: cannot translate the pattern/,
    )
  })
})
