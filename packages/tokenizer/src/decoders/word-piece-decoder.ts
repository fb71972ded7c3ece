import type { Decoder } from './decoder.js'

/** Undoes the spaces a word-level tokenizer puts around punctuation and English contractions. */
export function cleanUpTokenization(text: string): string {
  return text
    .replaceAll(' .', '.')
    .replaceAll(' ?', '?')
    .replaceAll(' !', '!')
    .replaceAll(' ,', ',')
    .replaceAll(" ' ", "'")
    .replaceAll(" n't", "n't")
    .replaceAll(" 'm", "'m")
    .replaceAll(' do not', " don't")
    .replaceAll(" 's", "'s")
    .replaceAll(" 've", "'ve")
    .replaceAll(" 're", "'re")
}

/** `WordPiece` decoder: a token with the prefix (`##`) joins the previous one, others get a space; optional cleanup. */
export function createWordPieceDecoder(prefix: string, cleanup: boolean): Decoder {
  return {
    decodeChain: (tokens) =>
      tokens.map((token, index) => {
        let text = token
        if (index !== 0) text = text.startsWith(prefix) ? text.replace(prefix, '') : ` ${text}`
        return cleanup ? cleanUpTokenization(text) : text
      }),
  }
}
