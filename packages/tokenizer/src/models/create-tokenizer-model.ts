import { describeValue, ParseError } from '@ludic/core'
import { z } from 'zod'
import { buildComponent, childLocation, parseJson, type ComponentBuilder, type JsonLocation } from '../json-location.js'
import { checkTokenCharacters, checkTokenId, defaultTokenizerLimits, raiseLimitHint, type TokenizerLimits } from '../tokenizer-limits.js'
import { BpeModel } from './bpe.js'
import type { TokenizerModel } from './tokenizer-model.js'
import { UnigramModel } from './unigram.js'
import { WordLevelModel } from './word-level.js'
import { WordPieceModel } from './word-piece.js'

/** Reads a `{ token: id }` vocabulary, checking each entry (a loop: vocabularies have 10⁵ entries); ids stay below `maxVocabularySize`. */
function readVocabulary(json: unknown, location: JsonLocation, limits: TokenizerLimits): Map<string, number> {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ParseError({ source: location.source, path: location.path, message: 'the vocabulary must be an object of token → id' })
  }
  const vocabulary = new Map<string, number>()
  for (const token in json) {
    const id = (json as Record<string, unknown>)[token]
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) {
      throw new ParseError({
        source: location.source,
        path: [...location.path, token],
        message: `a token id must be a non-negative integer, got ${describeValue(id)}`,
      })
    }
    checkTokenId(id, childLocation(location, token), limits)
    vocabulary.set(token, id)
  }
  return vocabulary
}

/** Reads BPE merges: `"a b"` strings (legacy) or `["a", "b"]` pairs. */
function readMerges(json: unknown, location: JsonLocation): [string, string][] {
  if (!Array.isArray(json)) throw new ParseError({ source: location.source, path: location.path, message: 'merges must be an array' })
  const merges: [string, string][] = new Array(json.length)
  for (let index = 0; index < json.length; index++) {
    const merge: unknown = json[index]
    if (typeof merge === 'string') {
      const parts = merge.split(' ')
      if (parts.length !== 2) {
        throw new ParseError({
          source: location.source,
          path: [...location.path, index],
          message: `a merge must be two tokens separated by one space, got ${describeValue(merge)}`,
        })
      }
      merges[index] = [parts[0]!, parts[1]!]
    } else if (Array.isArray(merge) && merge.length === 2 && typeof merge[0] === 'string' && typeof merge[1] === 'string') {
      merges[index] = [merge[0], merge[1]]
    } else {
      throw new ParseError({ source: location.source, path: [...location.path, index], message: 'a merge must be "a b" or ["a", "b"]' })
    }
  }
  return merges
}

const bpeOptionsSchema = z.object({
  dropout: z
    .number()
    .nullable()
    .default(null)
    .refine((dropout) => dropout === null || dropout === 0, 'BPE dropout is not supported (only null or 0: dropout is for training)'),
  unk_token: z.string().nullable().default(null),
  continuing_subword_prefix: z.string().nullable().default(null),
  end_of_word_suffix: z.string().nullable().default(null),
  fuse_unk: z.boolean().default(false),
  byte_fallback: z.boolean().default(false),
  ignore_merges: z.boolean().default(false),
  vocab: z.unknown(),
  merges: z.unknown(),
})

const builders: Record<string, ComponentBuilder<TokenizerModel>> = {
  BPE: (json, location, limits) => {
    const options = parseJson(bpeOptionsSchema, json, location)
    const vocabulary = readVocabulary(options.vocab, childLocation(location, 'vocab'), limits)
    const merges = readMerges(options.merges ?? [], childLocation(location, 'merges'))
    // A merge of tokens missing from the vocabulary throws a ParseError (MergeOutOfVocabularyError) at `merges[index]`.
    return new BpeModel({
      vocabulary,
      merges,
      unknownToken: options.unk_token,
      continuingSubwordPrefix: options.continuing_subword_prefix,
      endOfWordSuffix: options.end_of_word_suffix,
      fuseUnknown: options.fuse_unk,
      byteFallback: options.byte_fallback,
      ignoreMerges: options.ignore_merges,
      location,
    })
  },
  WordPiece: (json, location, limits) => {
    const options = parseJson(
      z.object({
        unk_token: z.string().default('[UNK]'),
        continuing_subword_prefix: z.string().default('##'),
        max_input_chars_per_word: z.number().int().positive().default(100),
        vocab: z.unknown(),
      }),
      json,
      location,
    )
    return new WordPieceModel({
      vocabulary: readVocabulary(options.vocab, childLocation(location, 'vocab'), limits),
      unknownToken: options.unk_token,
      continuingSubwordPrefix: options.continuing_subword_prefix,
      maxInputCharactersPerWord: options.max_input_chars_per_word,
      location,
    })
  },
  WordLevel: (json, location, limits) => {
    const options = parseJson(z.object({ unk_token: z.string().default('<unk>'), vocab: z.unknown() }), json, location)
    return new WordLevelModel(readVocabulary(options.vocab, childLocation(location, 'vocab'), limits), options.unk_token, location)
  },
  Unigram: (json, location, limits) => {
    const options = parseJson(
      z.object({
        unk_id: z.number().int().nonnegative().nullable().default(null),
        // A score is a log-probability: finite (JSON's 1e999 reads as Infinity, which serde refuses too).
        vocab: z.array(z.tuple([z.string(), z.number().finite()])),
        byte_fallback: z.boolean().default(false),
      }),
      json,
      location,
    )
    if (options.vocab.length > limits.maxVocabularySize) {
      throw new ParseError({
        source: location.source,
        path: [...location.path, 'vocab'],
        message: `${options.vocab.length} tokens are over the limit of ${limits.maxVocabularySize} (limits.maxVocabularySize); ${raiseLimitHint('maxVocabularySize')}`,
      })
    }
    const pieces = options.vocab.map(([piece]) => piece)
    checkTokenCharacters(pieces, 'Unigram pieces', (index) => childLocation(location, 'vocab', index, 0), limits)
    if (options.unk_id !== null && options.unk_id >= options.vocab.length) {
      throw new ParseError({
        source: location.source,
        path: [...location.path, 'unk_id'],
        message: `unk_id ${options.unk_id} is outside the vocabulary (${options.vocab.length} tokens)`,
      })
    }
    return new UnigramModel({ vocabulary: options.vocab, unknownId: options.unk_id, byteFallback: options.byte_fallback, location })
  },
}

/** Infers the type of a model written without one (old files), from its fields. */
function withInferredType(json: unknown): unknown {
  if (typeof json !== 'object' || json === null || Array.isArray(json) || 'type' in json) return json
  const fields = json as Record<string, unknown>
  const type = 'merges' in fields ? 'BPE' : Array.isArray(fields.vocab) ? 'Unigram' : 'max_input_chars_per_word' in fields ? 'WordPiece' : 'WordLevel'
  return { ...fields, type }
}

/** Builds the model of a `tokenizer.json` (its `model` field) from its JSON; ids at or over `limits.maxVocabularySize` are a ParseError. */
export function createTokenizerModel(json: unknown, location: JsonLocation, limits: TokenizerLimits = defaultTokenizerLimits): TokenizerModel {
  return buildComponent('model', builders, withInferredType(json), location, limits)
}
