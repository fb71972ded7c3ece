import type { JsonLocation } from '../json-location.js'
import { invertVocabulary, unknownTokenError, type TokenizerModel } from './tokenizer-model.js'

export interface WordPieceOptions {
  vocabulary: ReadonlyMap<string, number>
  unknownToken: string
  /** Marks a token that continues a word, `##` in BERT. */
  continuingSubwordPrefix: string
  /** Longer words (in characters) are one unknown token. */
  maxInputCharactersPerWord: number
  /** Where the model's JSON sits, for errors. */
  location?: JsonLocation
}

/** WordPiece (BERT): greedy longest-match-first over the vocabulary; a word with an unmatchable part is one unknown token. */
export class WordPieceModel implements TokenizerModel {
  readonly vocabSize: number
  private readonly tokens: (string | undefined)[]

  constructor(readonly options: WordPieceOptions) {
    this.vocabSize = options.vocabulary.size
    this.tokens = invertVocabulary(options.vocabulary)
  }

  tokenToId(token: string): number | undefined {
    return this.options.vocabulary.get(token)
  }

  get largestId(): number {
    return this.tokens.length - 1
  }

  idToToken(id: number): string | undefined {
    return this.tokens[id]
  }

  tokenize(piece: string): Int32Array {
    const { vocabulary, continuingSubwordPrefix } = this.options
    const characters = Array.from(piece)
    if (characters.length === 0) return new Int32Array(0)
    if (characters.length > this.options.maxInputCharactersPerWord) return Int32Array.of(this.unknownId())
    const ids: number[] = []
    let start = 0
    while (start < characters.length) {
      let end = characters.length
      let found = -1
      while (start < end) {
        let candidate = characters.slice(start, end).join('')
        if (start > 0) candidate = continuingSubwordPrefix + candidate
        const id = vocabulary.get(candidate)
        if (id !== undefined) {
          found = id
          break
        }
        end--
      }
      if (found < 0) return Int32Array.of(this.unknownId())
      ids.push(found)
      start = end
    }
    return Int32Array.from(ids)
  }

  private unknownId(): number {
    const id = this.options.vocabulary.get(this.options.unknownToken)
    if (id === undefined) {
      throw unknownTokenError(
        'WordPiece',
        this.options.location,
        'unk_token',
        `the unknown token ${JSON.stringify(this.options.unknownToken)} is not in the vocabulary`,
      )
    }
    return id
  }
}
