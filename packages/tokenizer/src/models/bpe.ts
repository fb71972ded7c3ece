import { ParseError } from '@ludic/core'
import type { JsonLocation } from '../json-location.js'
import { BpeWordMerger } from './bpe-word.js'
import { MergeTable } from './merge-table.js'
import { invertVocabulary, unknownTokenError, type TokenizerModel } from './tokenizer-model.js'

export interface BpeOptions {
  vocabulary: ReadonlyMap<string, number>
  /** Merges in priority order (rank = index), as pairs of tokens. */
  merges: readonly (readonly [string, string])[]
  unknownToken?: string | null
  continuingSubwordPrefix?: string | null
  endOfWordSuffix?: string | null
  /** Several unknown characters in a row give one unknown token. */
  fuseUnknown?: boolean
  /** Characters missing from the vocabulary become their UTF-8 bytes, as `<0xXX>` tokens. */
  byteFallback?: boolean
  /** A piece that is itself in the vocabulary is one token, merges or not (Llama 3). */
  ignoreMerges?: boolean
  /** Where the model's JSON sits, for errors (a bad merge is at `…merges[index]`). Default: `the BPE model`. */
  location?: JsonLocation
}

const mergeOutOfVocabularyMarker = Symbol.for('ludic.error.MergeOutOfVocabularyError')

/**
 * A merge whose tokens are not in the vocabulary: a `ParseError` at the merge (`model.merges[index]` of
 * `tokenizer.json`); `index` is its rank, `token` the missing one. Its `name` stays `'ParseError'`;
 * `MergeOutOfVocabularyError.isInstance` tells it apart.
 */
export class MergeOutOfVocabularyError extends ParseError {
  private readonly [mergeOutOfVocabularyMarker] = true
  readonly index: number
  readonly token: string

  constructor(options: { index: number; token: string; location?: JsonLocation | undefined }) {
    const location = options.location ?? { source: 'the BPE model', path: [] }
    super({
      source: location.source,
      path: [...location.path, 'merges', options.index],
      message: `merge ${options.index} needs the token ${JSON.stringify(options.token)}, which is not in the vocabulary`,
    })
    this.index = options.index
    this.token = options.token
  }

  static override isInstance(error: unknown): error is MergeOutOfVocabularyError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[mergeOutOfVocabularyMarker] === true
  }
}

const byteTokens = Array.from({ length: 256 }, (_, byte) => `<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`)
const utf8 = new TextEncoder()

/** Adds the byte tokens of a code point's UTF-8 encoding. */
function addUtf8Bytes(codePoint: number, byteIds: Int32Array, merger: BpeWordMerger): void {
  if (codePoint < 0x80) merger.add(byteIds[codePoint]!)
  else if (codePoint < 0x800) {
    merger.add(byteIds[0xc0 | (codePoint >> 6)]!)
    merger.add(byteIds[0x80 | (codePoint & 0x3f)]!)
  } else if (codePoint < 0x10000) {
    merger.add(byteIds[0xe0 | (codePoint >> 12)]!)
    merger.add(byteIds[0x80 | ((codePoint >> 6) & 0x3f)]!)
    merger.add(byteIds[0x80 | (codePoint & 0x3f)]!)
  } else {
    merger.add(byteIds[0xf0 | (codePoint >> 18)]!)
    merger.add(byteIds[0x80 | ((codePoint >> 12) & 0x3f)]!)
    merger.add(byteIds[0x80 | ((codePoint >> 6) & 0x3f)]!)
    merger.add(byteIds[0x80 | (codePoint & 0x3f)]!)
  }
}

/**
 * Byte-pair encoding as Hugging Face's `BPE` model: a piece starts as one symbol per character (with
 * the continuing-subword prefix and end-of-word suffix where set), unknown characters fall back to
 * bytes or to the unknown token, then merges apply by rank (see `BpeWordMerger`).
 */
export class BpeModel implements TokenizerModel {
  readonly vocabSize: number
  private readonly vocabulary: ReadonlyMap<string, number>
  private readonly tokens: (string | undefined)[]
  private readonly merger: BpeWordMerger
  /** Id of each single BMP character (-1 when it is not a token); used when there is no prefix or suffix. */
  private readonly characterIds: Int32Array
  private readonly byteIds: Int32Array | undefined
  private readonly unknownId: number | undefined
  private readonly simpleCharacters: boolean

  constructor(readonly options: BpeOptions) {
    this.vocabulary = options.vocabulary
    this.vocabSize = options.vocabulary.size
    this.tokens = invertVocabulary(options.vocabulary)
    const prefix = options.continuingSubwordPrefix ?? ''
    const merges = new MergeTable(options.merges.length)
    const location = options.location
    options.merges.forEach(([left, right], index) => {
      const leftId = this.vocabulary.get(left)
      if (leftId === undefined) throw new MergeOutOfVocabularyError({ index, token: left, location })
      const rightId = this.vocabulary.get(right)
      if (rightId === undefined) throw new MergeOutOfVocabularyError({ index, token: right, location })
      const mergedToken = left + right.slice(prefix.length)
      const mergedId = this.vocabulary.get(mergedToken)
      if (mergedId === undefined) throw new MergeOutOfVocabularyError({ index, token: mergedToken, location })
      merges.set(leftId, rightId, index, mergedId)
    })
    this.merger = new BpeWordMerger(merges)
    this.simpleCharacters = !options.continuingSubwordPrefix && !options.endOfWordSuffix
    this.characterIds = new Int32Array(0x10000).fill(-1)
    for (const [token, id] of this.vocabulary) {
      if (token.length === 1) this.characterIds[token.charCodeAt(0)] = id
    }
    if (options.byteFallback) {
      const ids = byteTokens.map((token) => this.vocabulary.get(token) ?? -1)
      this.byteIds = ids.includes(-1) ? undefined : Int32Array.from(ids)
    }
    const unknownToken = options.unknownToken
    this.unknownId = unknownToken === null || unknownToken === undefined ? undefined : this.vocabulary.get(unknownToken)
  }

  tokenToId(token: string): number | undefined {
    return this.vocabulary.get(token)
  }

  get largestId(): number {
    return this.tokens.length - 1
  }

  idToToken(id: number): string | undefined {
    return this.tokens[id]
  }

  tokenize(piece: string): Int32Array {
    if (piece.length === 0) return new Int32Array(0)
    if (this.options.ignoreMerges) {
      const id = this.vocabulary.get(piece)
      if (id !== undefined) return Int32Array.of(id)
    }
    const merger = this.merger
    merger.reset(piece.length)
    // An unknown token waiting to be added: Rust adds it when the next known character comes (or at the end).
    let pendingUnknown = false
    const fuse = this.options.fuseUnknown === true
    const length = piece.length
    for (let index = 0; index < length; ) {
      const code = piece.charCodeAt(index)
      const width = code >= 0xd800 && code <= 0xdbff && index + 1 < length ? 2 : 1
      let id = -1
      if (this.simpleCharacters && width === 1) id = this.characterIds[code]!
      else id = this.vocabulary.get(this.symbolText(piece, index, width)) ?? -1
      index += width
      if (id >= 0) {
        if (pendingUnknown) {
          merger.add(this.unknownId!)
          pendingUnknown = false
        }
        merger.add(id)
        continue
      }
      if (this.byteIds !== undefined) {
        const start = index - width
        if (this.simpleCharacters) addUtf8Bytes(piece.codePointAt(start)!, this.byteIds, merger)
        else for (const byte of utf8.encode(this.symbolText(piece, start, width))) merger.add(this.byteIds[byte]!)
        continue
      }
      if (this.options.unknownToken !== null && this.options.unknownToken !== undefined) {
        if (this.unknownId === undefined) {
          throw unknownTokenError(
            'BPE',
            this.options.location,
            'unk_token',
            `the unknown token ${JSON.stringify(this.options.unknownToken)} is not in the vocabulary`,
          )
        }
        if (pendingUnknown && !fuse) merger.add(this.unknownId)
        pendingUnknown = true
      }
      // Without an unknown token, Rust drops the character.
    }
    if (pendingUnknown) merger.add(this.unknownId!)
    return merger.merge()
  }

  /** The text of the symbol at `index` (a character, with the prefix unless first, the suffix if last). */
  private symbolText(piece: string, index: number, width: number): string {
    let text = piece.slice(index, index + width)
    if (index > 0 && this.options.continuingSubwordPrefix) text = this.options.continuingSubwordPrefix + text
    if (index + width === piece.length && this.options.endOfWordSuffix) text += this.options.endOfWordSuffix
    return text
  }
}
