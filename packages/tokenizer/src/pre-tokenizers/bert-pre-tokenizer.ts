import type { PreTokenizer } from './pre-tokenizer.js'
import { punctuationCharacter } from './punctuation.js'
import { splitByPattern } from './split-behavior.js'

const whiteSpaceCharacter = /\p{White_Space}/gu

/** `BertPreTokenizer`: cuts at white space (dropped), then isolates each punctuation character. */
export function createBertPreTokenizer(): PreTokenizer {
  return {
    steps: [
      { kind: 'split', split: (text, atStart, emit) => splitByPattern(text, whiteSpaceCharacter, 'Removed', false, atStart, emit) },
      { kind: 'split', split: (text, atStart, emit) => splitByPattern(text, punctuationCharacter, 'Isolated', false, atStart, emit) },
    ],
  }
}
