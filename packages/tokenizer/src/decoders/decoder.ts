/**
 * The last stage of the pipeline: turns tokens back into text. Like Hugging Face's `decode_chain`,
 * each decoder maps a list of token strings to a new list; the text is their concatenation.
 */
export interface Decoder {
  decodeChain(tokens: string[]): string[]
}

/** Decodes tokens to text with a decoder: the concatenation of its chain's output. */
export function decodeTokens(decoder: Decoder, tokens: string[]): string {
  return decoder.decodeChain(tokens).join('')
}
