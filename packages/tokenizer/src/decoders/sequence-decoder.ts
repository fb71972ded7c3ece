import type { Decoder } from './decoder.js'

/** `Sequence` decoder: each decoder's chain on the output of the one before. */
export function createSequenceDecoder(decoders: readonly Decoder[]): Decoder {
  return {
    decodeChain(tokens) {
      let result = tokens
      for (const decoder of decoders) result = decoder.decodeChain(result)
      return result
    },
  }
}
