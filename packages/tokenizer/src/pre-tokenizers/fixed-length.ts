import type { PreTokenizer } from './pre-tokenizer.js'

/** `FixedLength`: cuts into pieces of `length` characters (code points); the last may be shorter. */
export function createFixedLength(length: number): PreTokenizer {
  return {
    steps: [
      {
        kind: 'split',
        split(text, atStart, emit) {
          const characters = Array.from(text)
          for (let start = 0; start < characters.length; start += length) emit(characters.slice(start, start + length).join(''), atStart && start === 0)
        },
      },
    ],
  }
}
