import type { Normalizer } from './normalizer.js'

/** Control characters BERT drops: general category C, except tab, newline and carriage return; also NUL and U+FFFD. */
const bertControl = /[\0\ufffd]|(?![\t\n\r])\p{C}/gu
const bertWhiteSpace = /[\t\n\r]|\p{White_Space}/gu
const chineseCharacter =
  /[\u{4e00}-\u{9fff}\u{3400}-\u{4dbf}\u{20000}-\u{2a6df}\u{2a700}-\u{2b73f}\u{2b740}-\u{2b81f}\u{2b920}-\u{2ceaf}\u{f900}-\u{faff}\u{2f800}-\u{2fa1f}]/gu
const nonSpacingMarks = /\p{Mn}/gu

export interface BertNormalizerOptions {
  cleanText: boolean
  handleChineseChars: boolean
  /** Default (null): the same as `lowercase`. */
  stripAccents: boolean | null
  lowercase: boolean
}

/** `BertNormalizer`: cleans control characters and spaces, pads CJK ideographs with spaces, strips accents, lowercases. */
export function createBertNormalizer(options: BertNormalizerOptions): Normalizer {
  const stripAccents = options.stripAccents ?? options.lowercase
  return {
    normalize(text) {
      let result = text
      if (options.cleanText) result = result.replace(bertControl, '').replace(bertWhiteSpace, ' ')
      if (options.handleChineseChars) result = result.replace(chineseCharacter, ' $& ')
      if (stripAccents) result = result.normalize('NFD').replace(nonSpacingMarks, '')
      if (options.lowercase) {
        let lowered = ''
        for (const character of result) lowered += character.toLowerCase()
        result = lowered
      }
      return result
    },
  }
}
