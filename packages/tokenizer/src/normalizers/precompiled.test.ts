import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { ParseError } from '@ludic/core'
import { describe, expect, it, vi } from 'vitest'
import { conformanceCorpus } from '../../test/conformance-corpus.js'
import { nativeEncode, nativeNormalize, nativeTokenizer } from '../../test/native-reference.js'
import { Tokenizer } from '../tokenizer.js'
import { createNormalizer } from './create-normalizer.js'

const fixture = (name: string): Buffer => readFileSync(new URL(`../../test/fixtures/${name}`, import.meta.url))
const customRulesTokenizer = JSON.parse(fixture('unigram-custom-rules.tokenizer.json').toString('utf8')) as {
  normalizer: { normalizers: { type: string; precompiled_charsmap?: string }[] }
}
const customCharsmap = customRulesTokenizer.normalizer.normalizers.find((normalizer) => normalizer.type === 'Precompiled')!.precompiled_charsmap!
const nfkcCharsmap = gunzipSync(fixture('nmt-nfkc-charsmap.bin.gz')).toString('base64')
const location = { source: 'tokenizer.json', path: ['normalizer'] }

const texts = [
  'ＡＢＣ ﬁ ① e\u0301 x\u3000y ABC\r\nx',
  '\u1100\u1161\u11a8 👩🏽‍🚀 🇺🇸 ǅ ㎏ Ⅻ ½',
  'a\u0300\u0301\u0302\u0303\u0304\u0305 ﾊﾟ ｶﾀｶﾅ',
  '\0nul \u200b zero width \u00ad soft hyphen',
  ...conformanceCorpus()
    .filter((entry) => ['scripts', 'combining', 'whitespace', 'emoji', 'random', 'NFC/NFD pairs'].includes(entry.category))
    .map((entry) => entry.text),
]

describe.each([
  ['custom rules', customCharsmap],
  ['nmt_nfkc (T5, ALBERT, XLM-R…)', nfkcCharsmap],
])('Precompiled (%s)', (_, charsmap) => {
  const json = { type: 'Precompiled', precompiled_charsmap: charsmap }
  const normalizer = createNormalizer(json, location)

  it('normalizes every text as the Rust tokenizer (graphemes whole, else character by character)', () => {
    const mismatches = texts.filter((text) => normalizer.normalize(text) !== nativeNormalize(json, text))
    expect(mismatches).toEqual([])
  })
})

describe('a SentencePiece Unigram tokenizer with a Precompiled normalizer', () => {
  const ours = Tokenizer.fromJSON(customRulesTokenizer)
  const rust = nativeTokenizer(customRulesTokenizer)

  // Rust only: @huggingface/tokenizers departs from it on this file (template ids of [CLS]/[SEP],
  // NFKD of Hangul syllables, CR LF and ZWJ pieces), where ours agrees with Rust.
  it('encodes as the Rust tokenizer, with and without special tokens', async () => {
    const mismatches: string[] = []
    for (const text of texts) {
      for (const addSpecialTokens of [true, false]) {
        const ids = Array.from(ours.encode(text, { addSpecialTokens }))
        if (JSON.stringify(ids) !== JSON.stringify(await nativeEncode(rust, text, addSpecialTokens))) mismatches.push(JSON.stringify(text))
      }
    }
    expect(mismatches).toEqual([])
  })

  it('decodes as the Rust tokenizer', async () => {
    for (const text of texts.slice(0, 20)) {
      const ids = Array.from(ours.encode(text))
      expect(ours.decode(ids)).toBe(await rust.decode(ids, false))
      expect(ours.decode(ids, { skipSpecialTokens: true })).toBe(await rust.decode(ids, true))
    }
  })
})

describe('Precompiled without Node globals', () => {
  it("decodes the charsmap without Node's Buffer, as in a browser", () => {
    const json = { type: 'Precompiled', precompiled_charsmap: nfkcCharsmap }
    const expected = createNormalizer(json, location).normalize('ＡＢＣ ﬁ ①')
    vi.stubGlobal('Buffer', undefined)
    expect(createNormalizer(json, location).normalize('ＡＢＣ ﬁ ①')).toBe(expected)
    expect(expected).toBe('ABC fi 1')
  })
})

describe('Precompiled errors', () => {
  it('treats a null charsmap as no normalization', () => {
    expect(createNormalizer({ type: 'Precompiled', precompiled_charsmap: null }, location).normalize('ＡＢＣ')).toBe('ＡＢＣ')
  })

  it.each([
    ['not base64!', /must be base64/],
    ['QUJDR', /must be base64/],
    ['QU=', /must be base64/],
    [Buffer.from([200, 0, 0, 0, 1, 2]).toString('base64'), /does not fit/],
  ])('gives a ParseError at the charsmap for %j', (charsmap, message) => {
    try {
      createNormalizer({ type: 'Precompiled', precompiled_charsmap: charsmap }, location)
      expect.unreachable()
    } catch (error) {
      expect(ParseError.isInstance(error)).toBe(true)
      expect((error as ParseError).path).toEqual(['normalizer', 'precompiled_charsmap'])
      expect((error as ParseError).message).toMatch(message)
    }
  })
})
