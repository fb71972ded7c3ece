import type { JsonLocation } from '../json-location.js'
import { growthError } from '../normalizers/sequence-normalizer.js'
import { maxGrownLength, type TokenizerLimits } from '../tokenizer-limits.js'
import type { Decoder } from './decoder.js'

function totalLength(tokens: readonly string[]): number {
  let length = 0
  for (const token of tokens) length += token.length
  return length
}

/**
 * `Sequence` decoder: each decoder's chain on the output of the one before. As for normalizers, the
 * tokens' text may grow at most `limits.maxSequenceGrowth` times (plus 4,096), else a `TokenizerLimitError`.
 */
export function createSequenceDecoder(decoders: readonly Decoder[], location: JsonLocation, limits: TokenizerLimits): Decoder {
  return {
    decodeChain(tokens) {
      const length = totalLength(tokens)
      const maxLength = maxGrownLength(length, limits)
      let result = tokens
      for (const decoder of decoders) {
        result = decoder.decodeChain(result)
        const grownLength = totalLength(result)
        if (grownLength > maxLength) throw growthError('decoders', location, length, grownLength, limits)
      }
      return result
    },
  }
}
