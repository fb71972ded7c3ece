import type { PreTokenizer } from './pre-tokenizer.js'
import { splitByPattern } from './split-behavior.js'

export type PrependScheme = 'always' | 'first' | 'never'

export interface MetaspaceOptions {
  /** The character that stands for a space, `▁` in SentencePiece. */
  replacement: string
  /** When to put a `replacement` before a piece that does not start with one. */
  prependScheme: PrependScheme
  /** Cut before each `replacement` (MergedWithNext). */
  split: boolean
}

/** `Metaspace`: spaces become `▁`, a `▁` is prepended (always, first piece only, or never), then cuts before each `▁`. */
export function createMetaspace(options: MetaspaceOptions): PreTokenizer {
  const { replacement, prependScheme } = options
  const replacementPattern = new RegExp(replacement.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&'), 'gu')
  return {
    steps: [
      {
        kind: 'split',
        split(text, atStart, emit) {
          let piece = text.replaceAll(' ', replacement)
          const prepend = prependScheme === 'always' || (prependScheme === 'first' && atStart)
          if (prepend && !piece.startsWith(replacement)) piece = replacement + piece
          if (options.split) splitByPattern(piece, replacementPattern, 'MergedWithNext', false, atStart, emit)
          else emit(piece, atStart)
        },
      },
    ],
  }
}
