import type { PreTokenizer } from './pre-tokenizer.js'
import { splitByPattern } from './split-behavior.js'

/** Rust's `regex` crate's Unicode `\w`: alphabetic, marks, decimal digits, connector punctuation, join controls. */
const wordCharacters = '\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}'
const whitespacePattern = new RegExp(`[${wordCharacters}]+|[^${wordCharacters}\\p{White_Space}]+`, 'gu')
const whiteSpaceCharacter = /\p{White_Space}/gu

/** `Whitespace`: words (`\w+`) and runs of other non-space characters (`[^\w\s]+`); spaces are dropped. */
export function createWhitespace(): PreTokenizer {
  return { steps: [{ kind: 'split', split: (text, atStart, emit) => splitByPattern(text, whitespacePattern, 'Removed', true, atStart, emit) }] }
}

/** `WhitespaceSplit`: cuts at white space, which is dropped. */
export function createWhitespaceSplit(): PreTokenizer {
  return { steps: [{ kind: 'split', split: (text, atStart, emit) => splitByPattern(text, whiteSpaceCharacter, 'Removed', false, atStart, emit) }] }
}
