import { formatPath } from '@ludic/core'
import type { JsonLocation } from '../json-location.js'
import { maxGrownLength, TokenizerLimitError, type TokenizerLimits } from '../tokenizer-limits.js'
import type { Normalizer } from './normalizer.js'

/**
 * `Sequence`: each normalizer in turn. After each, the text may be at most `limits.maxSequenceGrowth`
 * times as long as it came in (plus 4,096): repeated `Replace` or `ByteLevel` normalizers would otherwise
 * grow it exponentially; past that, a `TokenizerLimitError`.
 */
export function createSequenceNormalizer(normalizers: readonly Normalizer[], location: JsonLocation, limits: TokenizerLimits): Normalizer {
  return {
    normalize(text) {
      const maxLength = maxGrownLength(text.length, limits)
      let result = text
      for (const normalizer of normalizers) {
        result = normalizer.normalize(result)
        if (result.length > maxLength) throw growthError('normalizers', location, text.length, result.length, limits)
      }
      return result
    },
  }
}

/** A Sequence made a text of `length` code units `grownLength` long, past `limits.maxSequenceGrowth`. */
export function growthError(what: string, location: JsonLocation, length: number, grownLength: number, limits: TokenizerLimits): TokenizerLimitError {
  const where = location.path.length === 0 ? location.source : `${location.source} at ${formatPath(location.path)}`
  return new TokenizerLimitError({
    limit: 'maxSequenceGrowth',
    value: Math.round(grownLength / Math.max(1, length)),
    limits,
    what: `the ${what} of ${where} make a text of ${length} code units ${grownLength} long: the growth`,
  })
}
