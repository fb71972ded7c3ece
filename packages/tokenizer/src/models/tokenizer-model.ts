import { ParseError } from '@ludic/core'
import type { JsonLocation } from '../json-location.js'

/** The third stage of the pipeline: turns one pre-tokenized piece into token ids. */
export interface TokenizerModel {
  /** Ids of the piece's tokens, in order (empty for an empty piece). */
  tokenize(piece: string): Int32Array
  tokenToId(token: string): number | undefined
  idToToken(id: number): string | undefined
  /** Number of tokens in the model's own vocabulary (added tokens not counted). */
  readonly vocabSize: number
  /** The largest id of the model's vocabulary (-1 when empty). */
  readonly largestId: number
}

/**
 * Builds the id → token table of a vocabulary, of length the largest id plus one (ids missing from the
 * vocabulary read undefined). Dense when the ids are (real vocabularies); when they are scattered (a few
 * tokens with large ids) the array stays sparse, so its memory follows the number of tokens, not the ids.
 */
export function invertVocabulary(vocabulary: ReadonlyMap<string, number>): (string | undefined)[] {
  let largest = -1
  for (const id of vocabulary.values()) if (id > largest) largest = id
  const dense = largest < 2 * vocabulary.size + 1024
  const tokens: (string | undefined)[] = dense ? new Array<string | undefined>(largest + 1).fill(undefined) : []
  for (const [token, id] of vocabulary) tokens[id] = token
  return tokens
}

/**
 * A text needs the unknown token, and the model has none (`field` unset) or names one missing from its
 * vocabulary: a defect of the file met while encoding (Hugging Face's `tokenizers` fails there too, and
 * loads such files), a `ParseError` at `field` of the model. `location` defaults to `the <kind> model`.
 */
export function unknownTokenError(kind: string, location: JsonLocation | undefined, field: string, problem: string): ParseError {
  const at = location ?? { source: `the ${kind} model`, path: [] }
  return new ParseError({ source: at.source, path: [...at.path, field], message: `${problem}, and the text has a character no token covers` })
}
