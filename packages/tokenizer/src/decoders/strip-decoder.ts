import type { Decoder } from './decoder.js'

/** `Strip` decoder: removes up to `start` leading and `stop` trailing `content` characters from each token. */
export function createStripDecoder(content: string, start: number, stop: number): Decoder {
  return {
    decodeChain: (tokens) =>
      tokens.map((token) => {
        const characters = Array.from(token)
        let startCut = 0
        while (startCut < start && startCut < characters.length && characters[startCut] === content) startCut++
        let stopCut = 0
        while (stopCut < stop && stopCut < characters.length && characters[characters.length - 1 - stopCut] === content) stopCut++
        return characters.slice(startCut, Math.max(startCut, characters.length - stopCut)).join('')
      }),
  }
}
