import type { PreTokenizer } from './pre-tokenizer.js'
import { splitByPattern } from './split-behavior.js'

/** Rust's `char::is_numeric`: Nd, Nl, No. Each character is one match. */
const numericCharacter = /\p{N}/gu

/** `Digits`: isolates numbers; each digit alone with `individual_digits`, else runs of digits. */
export function createDigits(individualDigits: boolean): PreTokenizer {
  const behavior = individualDigits ? 'Isolated' : 'Contiguous'
  return { steps: [{ kind: 'split', split: (text, atStart, emit) => splitByPattern(text, numericCharacter, behavior, false, atStart, emit) }] }
}
