import { describe, expect, it } from 'vitest'
import { nativePreTokenize } from '../../test/native-reference.js'
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
