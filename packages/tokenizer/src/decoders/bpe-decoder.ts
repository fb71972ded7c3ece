import type { Decoder } from './decoder.js'

/** `BPEDecoder`: the end-of-word suffix (`</w>`) becomes a space, or nothing at the last token. */
export function createBpeDecoder(suffix: string): Decoder {
  return { decodeChain: (tokens) => tokens.map((token, index) => token.replaceAll(suffix, index === tokens.length - 1 ? '' : ' ')) }
}
