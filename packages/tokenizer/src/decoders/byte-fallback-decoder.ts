import type { Decoder } from './decoder.js'

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const byteToken = /^<0x([0-9A-Fa-f]{2})>$/

/**
 * `ByteFallback` decoder: runs of `<0xXX>` tokens become the text of their bytes; a run that is not
 * valid UTF-8 becomes one U+FFFD per byte, as in Rust.
 */
export function createByteFallbackDecoder(): Decoder {
  return {
    decodeChain(tokens) {
      const result: string[] = []
      let bytes: number[] = []
      const flush = (): void => {
        if (bytes.length === 0) return
        try {
          result.push(strictUtf8.decode(Uint8Array.from(bytes)))
        } catch {
          for (let index = 0; index < bytes.length; index++) result.push('\ufffd')
        }
        bytes = []
      }
      for (const token of tokens) {
        const match = token.length === 6 ? byteToken.exec(token) : null
        if (match !== null) {
          bytes.push(Number.parseInt(match[1]!, 16))
          continue
        }
        flush()
        result.push(token)
      }
      flush()
      return result
    },
  }
}
