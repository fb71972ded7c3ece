import { ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { nativePreTokenize } from '../../test/native-reference.js'
import { referenceFiles, referenceTokenizerNames } from '../../test/reference-tokenizers.js'
import { gpt2Pattern } from '../pre-tokenizers/byte-level-pre-tokenizer.js'
import { Tokenizer } from '../tokenizer.js'
import { preTokenizerPatterns } from '../training/train-bpe.js'
import { splitByPattern } from '../pre-tokenizers/split-behavior.js'
import { compileOnigurumaPattern, translateOnigurumaPattern, UnsupportedPatternError } from './oniguruma-to-javascript.js'

/** Pieces of `text` cut at the matches of a pattern, matches kept (Split, Isolated). */
const ourPieces = (pattern: string, text: string): string[] => {
  const pieces: string[] = []
  splitByPattern(text, compileOnigurumaPattern(pattern), 'Isolated', false, true, (piece) => pieces.push(piece))
  return pieces
}

const cases: [string, string, string][] = [
  ['\\s is White_Space: U+0085 in, U+FEFF out', '\\s+', 'a\u0085b\ufeffc\u00a0d\u2028e\u001cf'],
  ['\\S', '\\S+', 'a\u0085b\ufeffc'],
  ['\\d is any decimal digit', '\\d+', '12 ١٢ ²³ Ⅻ'],
  ['\\w is letters, marks, numbers, connectors', '\\w+', 'ab·c ǅ Ⅻ ² _ e\u0301 x\u200dy'],
  ['\\W', '\\W+', 'ab·c ǅ Ⅻ ² _ e\u0301 x\u200dy'],
  ['\\h is a hexadecimal digit', '\\h+', 'deadBEEF xyz 09'],
  ['(?i:…) folds ſ and the Kelvin sign', "(?i:'s|'k|'t)", "'s 'S 'ſ 'k 'K 'K 't 'T"],
  ['(?i:ß) matches ss', '(?i:straße)', 'STRASSE strasse Straße'],
  ['(?i) inside classes', '(?i:[a-c]+)', 'ABCabcſK'],
  ['. excludes only \\n', '.', 'a\rb\nc\u2028d'],
  ['^ and $ are line anchors', '^\\w|\\w$', 'ab\ncd\r\nef'],
  ['\\A and \\z anchor the text', '\\A\\w|\\w\\z', 'ab\ncd'],
  ['\\b is a Unicode word boundary (empty matches cut too)', '\\b', 'héllo wörld'],
  ['empty matches', 'x*', 'abxxc'],
  ['possessive quantifiers', '\\p{L}*+\\p{L}|\\d++', 'abc 123'],
  ['atomic groups', '(?>a+)b|a', 'aaab aaa'],
  ['stacked interval quantifier', '\\d{2}+', '12345'],
  ['\\x{…} and \\p{^…}', '\\x{4e00}+|\\p{^L}+', '一一 a1!'],
  ['scripts without Script=', '\\p{Han}+|\\p{Hiragana}+|\\p{Cyrillic}+', '漢字かなЖж'],
  ['POSIX brackets', '[[:alpha:]]+|[[:digit:]]+|[[:punct:]]+', 'ab12!?$+▁😀'],
  ['literal braces', 'a{|}b|x{,2}', 'a{ }b xxx'],
  ['escaped characters', "\\'\\-\\/\\ \\#", "'-/ #"],
  ['comments and named groups', '(?#ignored)(?<word>\\w+)', 'ab cd'],
]

describe('translateOnigurumaPattern', () => {
  it.each(cases)('%s: matches as Oniguruma in the Rust tokenizer', (_, pattern, text) => {
    expect(ourPieces(pattern, text)).toEqual(nativePreTokenize({ type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false }, text))
  })

  it('writes the JavaScript differences out', () => {
    expect(translateOnigurumaPattern('\\s')).toBe('\\p{White_Space}')
    expect(translateOnigurumaPattern("(?i:'s)")).toBe("(?:'[sS\\u{17f}])")
    expect(translateOnigurumaPattern('.')).toBe('[^\\n]')
    expect(translateOnigurumaPattern('\\p{Han}')).toBe('\\p{Script=Han}')
  })

  it.each([
    ['(a)\\1', /unsupported escape \\1/],
    ['\\Gx', /unsupported escape \\G/],
    ['[a[b]]', /nested character classes/],
    ['[a&&b]', /intersection/],
    ['(?x) a', /unsupported group option/],
    ['(a', /unbalanced parenthesis/],
    ['\\p{NoSuchProperty}', /unsupported Unicode property/],
  ])('refuses %s, naming the construct', (pattern, message) => {
    expect(() => translateOnigurumaPattern(pattern)).toThrow(UnsupportedPatternError)
    expect(() => translateOnigurumaPattern(pattern)).toThrow(message)
  })
})

/** Every `Regex` pattern in a JSON value. */
function regexPatterns(json: unknown, found: string[] = []): string[] {
  if (Array.isArray(json)) for (const item of json) regexPatterns(item, found)
  else if (typeof json === 'object' && json !== null) {
    for (const [key, value] of Object.entries(json)) {
      if (key === 'Regex' && typeof value === 'string') found.push(value)
      else if (key !== 'vocab' && key !== 'merges') regexPatterns(value, found)
    }
  }
  return found
}

describe('catastrophic backtracking is refused when a pattern loads', () => {
  it.each([
    ['(a+)+$', '+ at offset 4'],
    ['(a*)*b', '* at offset 4'],
    ['(a|a)*$', '* at offset 5'],
    ['(a|aa)+$', '+ at offset 6'],
    ['(\\w+\\s?)*$', '* at offset 8'],
    ['(a?){20}a{20}', '{20} at offset 4'],
    ['(?:a{1,3})+$', '+ at offset 10'],
    ['\\d{1,3}+x', '+ at offset 7'],
    ['(?:(?:ab)+c)*', '* at offset 12'],
    ['(?i:(?:ß)+)+', '+ at offset 9'],
  ])('refuses %s (a repeated part that matches in more than one way)', (pattern, where) => {
    expect(() => translateOnigurumaPattern(pattern)).toThrow(UnsupportedPatternError)
    expect(() => translateOnigurumaPattern(pattern)).toThrow(`the quantifier ${where} repeats a part that can itself match in more than one way`)
  })

  it('refuses the (a+)+$ Split pattern at load, so encode cannot hang on a long aaaa…b (it did: 2^n backtracking)', () => {
    const json = {
      model: { type: 'WordLevel', vocab: { a: 0 }, unk_token: 'a' },
      pre_tokenizer: { type: 'Split', pattern: { Regex: '(a+)+$' }, behavior: 'Isolated', invert: false },
    }
    // Refused by Tokenizer.fromJSON itself: no tokenizer is made, so no encode ever runs the pattern.
    let error: unknown
    try {
      Tokenizer.fromJSON(json)
    } catch (caught) {
      error = caught
    }
    expect(ParseError.isInstance(error)).toBe(true)
    expect((error as ParseError).path).toEqual(['pre_tokenizer', 'pattern', 'Regex'])
    expect(String(error)).toMatch(/cannot translate the pattern: the quantifier \+ at offset 4 repeats .* make that part atomic/)
  })

  it.each([
    ['Regex', 'x'.repeat(100_000)],
    ['String', 'x'.repeat(100_000)],
  ])('refuses a %s pattern too large to compile at load, not in the first encode (found by the fuzz test)', (kind, pattern) => {
    const json = {
      model: { type: 'WordLevel', vocab: { a: 0 }, unk_token: 'a' },
      pre_tokenizer: { type: 'Split', pattern: { [kind]: pattern }, behavior: 'Isolated', invert: false },
    }
    let error: unknown
    try {
      Tokenizer.fromJSON(json)
    } catch (caught) {
      error = caught
    }
    expect(ParseError.isInstance(error), String(error)).toBe(true)
    expect((error as ParseError).path).toEqual(['pre_tokenizer', 'pattern', kind])
    expect((error as ParseError).message).toMatch(/the pattern: Invalid regular expression: \/x+…x+\/gu: Regular expression too large$/)
  })

  it.each([
    ['(?>a+)+$', 'aaab aa'],
    ['(a++)+$', 'aaab aa'],
    ['(?:ab)+|(?:a{2})*', 'ababaaaa'],
    ['(a+)?b|(?:a|b)c', 'aab bc'],
    ['(?:(?=a+)a)+', 'aaa'],
    ['[ab]+c?', 'abac'],
  ])('accepts %s: repeats of parts that match one way, and variable parts that do not repeat', (pattern, text) => {
    expect(ourPieces(pattern, text)).toEqual(nativePreTokenize({ type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false }, text))
  })

  const realPatterns = [
    ...new Set([
      ...referenceTokenizerNames.flatMap((name) => regexPatterns(referenceFiles(name).tokenizer)),
      gpt2Pattern,
      ...Object.values(preTokenizerPatterns),
    ]),
  ]

  it('accepts every real tokenizer’s pattern (Qwen3, Llama 3, GPT-4o, GPT-2), which split long adversarial texts in linear time', () => {
    expect(realPatterns.length).toBeGreaterThanOrEqual(4)
    // A million characters each: split in linear time, a fraction of a second in all; with backtracking quadratic in
    // the text, 10¹² steps, far past the test's timeout (which catches it: no clock is read).
    const texts = [
      `${'a'.repeat(1_000_000)}b`,
      `${' '.repeat(1_000_000)}x`,
      `${'\n '.repeat(500_000)}x`,
      "'".repeat(1_000_000),
      `${'1'.repeat(1_000_000)}!`,
      'Aé'.repeat(500_000),
    ]
    for (const pattern of realPatterns) {
      const compiled = compileOnigurumaPattern(pattern)
      for (const text of texts) {
        let length = 0
        splitByPattern(text, compiled, 'Isolated', false, true, (piece) => {
          length += piece.length
        })
        expect(length, `${pattern} on ${JSON.stringify(text.slice(0, 8))}…`).toBe(text.length)
      }
    }
  })
})
