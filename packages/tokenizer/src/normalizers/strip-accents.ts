import type { Normalizer } from './normalizer.js'

const combiningMarks = /\p{M}/gu

/** `StripAccents`: removes combining marks (usually after `NFD`, which separates them from their letters). */
export function createStripAccents(): Normalizer {
  return { normalize: (text) => text.replace(combiningMarks, '') }
}
