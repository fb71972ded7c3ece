import type { PrependScheme } from '../pre-tokenizers/metaspace.js'
import type { Decoder } from './decoder.js'

/**
 * `Metaspace` decoder: `▁` becomes a space, except in the first token when a `▁` was prepended at
 * encoding (there every `▁` is dropped, as in Rust).
 */
export function createMetaspaceDecoder(replacement: string, prependScheme: PrependScheme): Decoder {
  return {
    decodeChain: (tokens) => tokens.map((token, index) => token.replaceAll(replacement, index === 0 && prependScheme !== 'never' ? '' : ' ')),
  }
}
