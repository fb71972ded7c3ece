import { ParseError } from '@ludic/core'
import { z } from 'zod'
import type { JsonLocation } from './json-location.js'

/**
 * Bounds on what a `tokenizer.json`, a `tokenizer_config.json` and a chat template may ask of the process,
 * checked before anything is allocated or run, so that a malformed or hostile file gives a typed error
 * rather than an out-of-memory crash or a hang. Each default is far above what real tokenizers use; raise
 * one with the `limits` option of `loadTokenizer` or `Tokenizer.fromJSON`.
 */
export const tokenizerLimitsSchema = z.object({
  /**
   * Token ids (of the model's vocabulary, added tokens and post-processor special tokens) must be below
   * this; it bounds `vocabSize` and every table indexed by id. Default 2^24 = 16,777,216 (the largest
   * real vocabularies hold about 10^6 tokens); at most 2^31, as ids are 32-bit.
   */
  maxVocabularySize: z
    .number()
    .int()
    .positive()
    .max(2 ** 31)
    .default(2 ** 24),
})

/** The limits, every field set. */
export type TokenizerLimits = z.output<typeof tokenizerLimitsSchema>
/** The limits as options: any field left out takes its default. */
export type TokenizerLimitsOptions = z.input<typeof tokenizerLimitsSchema>

export const defaultTokenizerLimits: TokenizerLimits = tokenizerLimitsSchema.parse({})

/** The sentence every limit error ends with: which limit, and how to raise it. */
export function raiseLimitHint(limit: keyof TokenizerLimits): string {
  return `raise it with the limits.${limit} option of loadTokenizer or Tokenizer.fromJSON`
}

/**
 * Checks a token id read from a file against `maxVocabularySize`: a `ParseError` at its JSON location
 * naming the id, the limit and how to raise it.
 */
export function checkTokenId(id: number, location: JsonLocation, limits: TokenizerLimits): void {
  if (id < limits.maxVocabularySize) return
  throw new ParseError({
    source: location.source,
    path: location.path,
    message: `the token id ${id} is not below the limit of ${limits.maxVocabularySize} ids (limits.maxVocabularySize); ${raiseLimitHint('maxVocabularySize')}`,
  })
}
