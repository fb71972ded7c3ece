import { LudicError, ParseError } from '@ludic/core'
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
  /**
   * The characters (UTF-16 code units) of the added tokens together, and those of a Unigram vocabulary's
   * pieces together: each set is indexed in a character trie of about 200 bytes a character, so that a
   * few megabytes of long tokens would take gigabytes. Real files: a few thousand for added tokens, about
   * 1.5 million for a 250,000-piece Unigram vocabulary. Default 4,000,000.
   */
  maxTokenCharacters: z.number().int().positive().default(4_000_000),
  /** How deep `Sequence` normalizers, pre-tokenizers, post-processors and decoders may nest (real files: 1). Default 32. */
  maxSequenceDepth: z.number().int().positive().default(32),
  /**
   * How many components one `Sequence` may hold, those of nested Sequences included: each runs over the whole
   * text, and a pre-tokenizer's steps call each other. Real files: at most 7. Default 64.
   */
  maxSequenceLength: z.number().int().positive().default(64),
  /**
   * How many times longer a `Sequence` of normalizers or decoders may make its text (plus 4,096 code units):
   * `Replace` or `ByteLevel` repeated would otherwise grow it exponentially. Checked after each component
   * while encoding or decoding (a `TokenizerLimitError`). Real pipelines: under 20 (NFKC's longest expansion
   * is 18 characters). Default 64.
   */
  maxSequenceGrowth: z.number().positive().default(64),
  /** The most items one `range()` of a chat template may give: Python Jinja's sandbox `MAX_RANGE`. Default 100,000. */
  maxChatTemplateRange: z.number().int().nonnegative().default(100_000),
  /** The longest string (in UTF-16 code units) or list a chat template may build, its output included. Default 10,000,000. */
  maxChatTemplateLength: z.number().int().positive().default(10_000_000),
  /**
   * The work one chat-template rendering may do, in steps: each evaluated expression or statement is one,
   * each loop iteration ten (it costs about that much more). Real templates take about 50 per message.
   * Default 1,000,000 (about a second).
   */
  maxChatTemplateSteps: z.number().int().positive().default(1_000_000),
  /** A last resort past the step count (one step may scan a long string): rendering stops after this long. Default 10,000 ms. */
  chatTemplateTimeoutMs: z.number().positive().default(10_000),
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

const tokenizerLimitMarker = Symbol.for('ludic.error.TokenizerLimitError')

/**
 * Encoding, decoding or rendering a chat template went past one of the `TokenizerLimits` (limits on the
 * file itself are `ParseError`s, when it loads). `limit` names it and `value` is what was asked; the
 * message says how to raise it.
 */
export class TokenizerLimitError extends LudicError {
  private readonly [tokenizerLimitMarker] = true
  override readonly name = 'TokenizerLimitError'
  readonly limit: keyof TokenizerLimits
  readonly value: number

  constructor(options: { limit: keyof TokenizerLimits; value: number; limits: TokenizerLimits; what: string; cause?: unknown }) {
    super(
      `${options.what} (${options.value}) is over the limit of ${options.limits[options.limit]} (limits.${options.limit}); ${raiseLimitHint(options.limit)}`,
      options,
    )
    this.limit = options.limit
    this.value = options.value
  }

  static override isInstance(error: unknown): error is TokenizerLimitError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[tokenizerLimitMarker] === true
  }
}

/** The longest text a `Sequence` may make of a text `length` long, within `limits.maxSequenceGrowth`. */
export function maxGrownLength(length: number, limits: TokenizerLimits): number {
  return limits.maxSequenceGrowth * length + 4096
}

/**
 * Checks that the `texts` (added tokens' contents, Unigram pieces), at `locationOf(index)`, hold at most
 * `limits.maxTokenCharacters` characters together: a `ParseError` at the one that crosses it.
 */
export function checkTokenCharacters(texts: readonly string[], what: string, locationOf: (index: number) => JsonLocation, limits: TokenizerLimits): void {
  let total = 0
  texts.forEach((text, index) => {
    total += text.length
    if (total <= limits.maxTokenCharacters) return
    const location = locationOf(index)
    throw new ParseError({
      source: location.source,
      path: location.path,
      message: `the ${what} up to here hold ${total} characters, over the limit of ${limits.maxTokenCharacters} (limits.maxTokenCharacters); ${raiseLimitHint('maxTokenCharacters')}`,
    })
  })
}
