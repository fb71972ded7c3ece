import type { Decoder } from './decoder.js'

/** `Fuse` decoder: all tokens become one string. */
export function createFuseDecoder(): Decoder {
  return { decodeChain: (tokens) => [tokens.join('')] }
}
