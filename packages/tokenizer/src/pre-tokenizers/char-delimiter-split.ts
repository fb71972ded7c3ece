import type { PreTokenizer } from './pre-tokenizer.js'
import { splitByPattern } from './split-behavior.js'

/** `CharDelimiterSplit`: cuts at each `delimiter`, which is dropped. */
export function createCharDelimiterSplit(delimiter: string): PreTokenizer {
  const pattern = new RegExp(delimiter.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&'), 'gu')
  return { steps: [{ kind: 'split', split: (text, atStart, emit) => splitByPattern(text, pattern, 'Removed', false, atStart, emit) }] }
}
