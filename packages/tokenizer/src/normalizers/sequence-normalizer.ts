import type { Normalizer } from './normalizer.js'

/** `Sequence`: each normalizer in turn. */
export function createSequenceNormalizer(normalizers: readonly Normalizer[]): Normalizer {
  return {
    normalize(text) {
      let result = text
      for (const normalizer of normalizers) result = normalizer.normalize(result)
      return result
    },
  }
}
