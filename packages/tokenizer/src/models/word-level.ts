import type { JsonLocation } from '../json-location.js'
import { invertVocabulary, unknownTokenError, type TokenizerModel } from './tokenizer-model.js'

/** WordLevel: each piece is one token, or the unknown token. */
export class WordLevelModel implements TokenizerModel {
  readonly vocabSize: number
  private readonly tokens: (string | undefined)[]

  constructor(
    private readonly vocabulary: ReadonlyMap<string, number>,
    private readonly unknownToken: string,
    /** Where the model's JSON sits, for errors. */
    private readonly location?: JsonLocation,
  ) {
    this.vocabSize = vocabulary.size
    this.tokens = invertVocabulary(vocabulary)
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
    const id = this.vocabulary.get(piece) ?? this.vocabulary.get(this.unknownToken)
    if (id === undefined)
      throw unknownTokenError('WordLevel', this.location, 'unk_token', `the unknown token ${JSON.stringify(this.unknownToken)} is not in the vocabulary`)
    return Int32Array.of(id)
  }
}
