import { byteLevelAlphabet } from '../src/index.js'
import { tokenizerJson } from './native-reference.js'

/** A byte-level BPE whose vocabulary is the 256 byte characters plus `extraTokens` (merged from their characters). */
export function byteLevelBpeJson(options: { extraTokens?: string[]; fields?: Record<string, unknown> } = {}): Record<string, unknown> {
  const alphabet = byteLevelAlphabet()
  const vocab: Record<string, number> = {}
  alphabet.forEach((character, id) => (vocab[character] = id))
  const merges: [string, string][] = []
  for (const token of options.extraTokens ?? []) {
    const characters = Array.from(token)
    let merged = characters[0]!
    for (const character of characters.slice(1)) {
      if (vocab[merged + character] === undefined) {
        merges.push([merged, character])
        vocab[merged + character] = Object.keys(vocab).length
      }
      merged += character
    }
  }
  return tokenizerJson({
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
    ...options.fields,
  })
}
