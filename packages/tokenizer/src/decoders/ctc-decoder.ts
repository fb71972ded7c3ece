import type { Decoder } from './decoder.js'
import { cleanUpTokenization } from './word-piece-decoder.js'

/** `CTC` decoder: repeated tokens collapse, the pad token goes, the word delimiter becomes a space. */
export function createCtcDecoder(padToken: string, wordDelimiterToken: string, cleanup: boolean): Decoder {
  return {
    decodeChain(tokens) {
      const result: string[] = []
      tokens.forEach((token, index) => {
        if (index > 0 && tokens[index - 1] === token) return
        let text = token.replaceAll(padToken, '')
        if (cleanup) text = cleanUpTokenization(text).replaceAll(wordDelimiterToken, ' ')
        if (text.length > 0) result.push(text)
      })
      return result
    },
  }
}
