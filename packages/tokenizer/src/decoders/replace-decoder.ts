import { replaceAll } from '../normalizers/replace.js'
import type { Decoder } from './decoder.js'

/** `Replace` decoder: in each token, every match of the pattern becomes `content`. */
export function createReplaceDecoder(pattern: RegExp, content: string): Decoder {
  return { decodeChain: (tokens) => tokens.map((token) => replaceAll(token, pattern, content)) }
}
