import { toByteLevel } from '../byte-level/byte-level-alphabet.js'
import type { Normalizer } from './normalizer.js'

/** `ByteLevel` normalizer: every UTF-8 byte becomes its GPT-2 byte-level character. */
export function createByteLevelNormalizer(): Normalizer {
  return { normalize: toByteLevel }
}
