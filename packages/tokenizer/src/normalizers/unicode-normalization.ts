import type { Normalizer } from './normalizer.js'

export type UnicodeNormalizationForm = 'NFC' | 'NFD' | 'NFKC' | 'NFKD'

const asciiOnly = /^[\x00-\x7f]*$/

/** `NFC`, `NFD`, `NFKC`, `NFKD`: Unicode normalization forms (ASCII text is left as it is, unchanged by all four). */
export function createUnicodeNormalization(form: UnicodeNormalizationForm): Normalizer {
  return { normalize: (text) => (asciiOnly.test(text) ? text : text.normalize(form)) }
}
