import { LudicError } from '@ludic/core'

/** Incremental decoding: `push` returns the text an id completes; `flush` what is left at the end. */
export interface StreamDecoder {
  push(id: number): string
  flush(): string
}

/**
 * Streaming decode as Hugging Face's `DecodeStream`: decodes a small window of recent ids and emits
 * what the new id adds to the window's text, once that text does not end in U+FFFD (an incomplete
 * multi-byte character: its other bytes are still to come). The window keeps the previous token for
 * context, so decoders that treat the first token specially (Metaspace) give the same text as a
 * full decode.
 */
export function createStreamDecoder(decode: (ids: readonly number[]) => string): StreamDecoder {
  let ids: number[] = []
  let prefix = ''
  /** Where the ids of the last emitted text start in `ids`: the window keeps them, for context. */
  let prefixIndex = 0
  return {
    push(id) {
      ids.push(id)
      const text = decode(ids)
      if (text.length <= prefix.length || text.endsWith('\ufffd')) return ''
      if (!text.startsWith(prefix)) {
        throw new LudicError(`stream decoding: the text of the window no longer starts with the text already emitted (${JSON.stringify(prefix)})`)
      }
      const added = text.slice(prefix.length)
      const nextPrefixIndex = ids.length - prefixIndex
      ids = ids.slice(prefixIndex)
      prefix = decode(ids)
      prefixIndex = nextPrefixIndex
      return added
    },
    flush() {
      const text = decode(ids)
      const rest = text.startsWith(prefix) ? text.slice(prefix.length) : ''
      ids = []
      prefix = ''
      prefixIndex = 0
      return rest
    },
  }
}
