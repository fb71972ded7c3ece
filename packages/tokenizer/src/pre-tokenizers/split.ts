import type { PreTokenizer } from './pre-tokenizer.js'
import { splitByPattern, type SplitBehavior } from './split-behavior.js'

/** `Split`: cuts at the matches of a pattern (a literal or an Oniguruma regex), keeping what `behavior` says. */
export function createSplit(pattern: RegExp, behavior: SplitBehavior, invert: boolean): PreTokenizer {
  return {
    steps: [{ kind: 'split', split: (text, atStart, emit) => splitByPattern(text, pattern, behavior, invert, atStart, emit) }],
  }
}
