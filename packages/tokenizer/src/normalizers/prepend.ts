import type { Normalizer } from './normalizer.js'

/** `Prepend`: puts `prepend` before any non-empty text (SentencePiece's `▁`). */
export function createPrepend(prepend: string): Normalizer {
  return { normalize: (text) => (text.length === 0 ? text : prepend + text) }
}
