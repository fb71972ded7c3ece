import { toByteLevel } from '../byte-level/byte-level-alphabet.js'
import { compileOnigurumaPattern } from '../regex/oniguruma-to-javascript.js'
import type { PreTokenizer, PreTokenizerStep } from './pre-tokenizer.js'
import { splitByPattern } from './split-behavior.js'

/** GPT-2's pre-tokenization pattern, used by `ByteLevel` when `use_regex` is true. */
export const gpt2Pattern = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"

export interface ByteLevelPreTokenizerOptions {
  /** Put a space before a piece that does not start with one (so a first word encodes like the others). */
  addPrefixSpace: boolean
  /** Cut with GPT-2's pattern first. */
  useRegex: boolean
}

/** `ByteLevel`: optionally a prefix space and GPT-2's split, then every UTF-8 byte becomes its byte-level character. */
export function createByteLevelPreTokenizer(options: ByteLevelPreTokenizerOptions): PreTokenizer {
  const steps: PreTokenizerStep[] = []
  if (options.addPrefixSpace) steps.push({ kind: 'map', map: (piece) => (piece.startsWith(' ') ? piece : ` ${piece}`) })
  if (options.useRegex) {
    const pattern = compileOnigurumaPattern(gpt2Pattern)
    steps.push({ kind: 'split', split: (text, atStart, emit) => splitByPattern(text, pattern, 'Isolated', false, atStart, emit) })
  }
  steps.push({ kind: 'map', map: toByteLevel })
  return { steps }
}
