import { appendFromByteLevel } from '../byte-level/byte-level-alphabet.js'
import type { Decoder } from './decoder.js'

const utf8Decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true })
const utf8Encoder = new TextEncoder()

/**
 * Joins tokens into bytes (a token with a character outside the byte-level table keeps its own UTF-8,
 * as an added token like `<|im_end|>` does) and decodes them as UTF-8, broken sequences becoming U+FFFD.
 */
export function byteLevelTokensToText(tokens: readonly string[]): string {
  let size = 0
  for (const token of tokens) size += token.length * 3
  const bytes = new Uint8Array(size)
  let length = 0
  for (const token of tokens) {
    const next = appendFromByteLevel(token, bytes, length)
    if (next >= 0) length = next
    else length += utf8Encoder.encodeInto(token, bytes.subarray(length)).written
  }
  return utf8Decoder.decode(bytes.subarray(0, length))
}

/** `ByteLevel` decoder: byte-level characters back to bytes, then UTF-8. */
export function createByteLevelDecoder(): Decoder {
  return { decodeChain: (tokens) => [byteLevelTokensToText(tokens)] }
}
