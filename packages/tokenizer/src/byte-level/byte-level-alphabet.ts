/**
 * GPT-2's byte ↔ unicode table: every byte gets a printable character, so that byte-level BPE works on
 * strings. Printable Latin-1 bytes map to themselves; the 68 others (controls, space, 0x7F–0xA0, 0xAD)
 * map to U+0100 onwards, in byte order. Space (0x20) becomes `Ġ` (U+0120), newline `Ċ` (U+010A).
 */
function buildByteToCharacterCode(): Uint16Array {
  const table = new Uint16Array(256)
  let next = 256
  for (let byte = 0; byte < 256; byte++) {
    const printable = (byte >= 0x21 && byte <= 0x7e) || (byte >= 0xa1 && byte <= 0xac) || (byte >= 0xae && byte <= 0xff)
    table[byte] = printable ? byte : next++
  }
  return table
}

/** `byteToCharacterCode[byte]`: the UTF-16 code of the character standing for `byte`. */
export const byteToCharacterCode: Uint16Array = buildByteToCharacterCode()

/** The 256 characters, as strings, indexed by byte. */
export const byteToCharacter: readonly string[] = Array.from(byteToCharacterCode, (code) => String.fromCharCode(code))

/** `characterCodeToByte[code]`: the byte a character stands for, or -1; covers codes below 0x144. */
export const characterCodeToByte: Int16Array = (() => {
  const table = new Int16Array(0x144).fill(-1)
  for (let byte = 0; byte < 256; byte++) table[byteToCharacterCode[byte]!] = byte
  return table
})()

/** The 256 characters in byte order, as `ByteLevel.alphabet()` gives them (the initial alphabet of a trainer). */
export function byteLevelAlphabet(): string[] {
  return [...byteToCharacter]
}

/**
 * Maps a string to its byte-level form: UTF-8 bytes, each replaced by its character.
 * Lone surrogates count as U+FFFD, as in Rust (whose strings cannot hold them).
 */
export function toByteLevel(text: string): string {
  let result = ''
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (code < 0x80) {
      result += byteToCharacter[code]!
    } else if (code < 0x800) {
      result += byteToCharacter[0xc0 | (code >> 6)]! + byteToCharacter[0x80 | (code & 0x3f)]!
    } else {
      let codePoint = code
      if (code >= 0xd800 && code <= 0xdbff && index + 1 < text.length) {
        const low = text.charCodeAt(index + 1)
        if (low >= 0xdc00 && low <= 0xdfff) {
          codePoint = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00)
          index++
        } else codePoint = 0xfffd
      } else if (code >= 0xd800 && code <= 0xdfff) codePoint = 0xfffd
      if (codePoint >= 0x10000) {
        result +=
          byteToCharacter[0xf0 | (codePoint >> 18)]! +
          byteToCharacter[0x80 | ((codePoint >> 12) & 0x3f)]! +
          byteToCharacter[0x80 | ((codePoint >> 6) & 0x3f)]! +
          byteToCharacter[0x80 | (codePoint & 0x3f)]!
      } else {
        result += byteToCharacter[0xe0 | (codePoint >> 12)]! + byteToCharacter[0x80 | ((codePoint >> 6) & 0x3f)]! + byteToCharacter[0x80 | (codePoint & 0x3f)]!
      }
    }
  }
  return result
}

/**
 * Maps byte-level characters back to bytes and appends them to `bytes` from `length`; returns the
 * new length, or -1 when a character is not in the table (the caller then keeps the token's own
 * UTF-8, as Hugging Face's ByteLevel decoder does).
 */
export function appendFromByteLevel(token: string, bytes: Uint8Array, length: number): number {
  let position = length
  for (let index = 0; index < token.length; index++) {
    const code = token.charCodeAt(index)
    const byte = code < 0x144 ? characterCodeToByte[code]! : -1
    if (byte < 0) return -1
    bytes[position++] = byte
  }
  return position
}
