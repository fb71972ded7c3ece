import type { PreTokenizer } from './pre-tokenizer.js'
import { splitByPattern, type SplitBehavior } from './split-behavior.js'

/** Rust's `is_ascii_punctuation() || is_punctuation()`: ASCII punctuation and symbols, and Unicode P*. Each character is one match. */
export const punctuationCharacter = /[!-/:-@[-`{-~]|\p{P}/gu

/** `Punctuation`: cuts at each punctuation character (Isolated by default). */
export function createPunctuation(behavior: SplitBehavior): PreTokenizer {
  return { steps: [{ kind: 'split', split: (text, atStart, emit) => splitByPattern(text, punctuationCharacter, behavior, false, atStart, emit) }] }
}
