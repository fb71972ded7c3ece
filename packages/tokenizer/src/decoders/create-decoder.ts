import { ParseError } from '@ludic/core'
import { z } from 'zod'
import { buildComponent, childLocation, parseJson, readSequenceItems, type ComponentBuilder, type JsonLocation } from '../json-location.js'
import { defaultTokenizerLimits, type TokenizerLimits } from '../tokenizer-limits.js'
import { compileStringOrRegexPattern, stringOrRegexPatternSchema } from '../regex/string-or-regex-pattern.js'
import { createBpeDecoder } from './bpe-decoder.js'
import { createByteFallbackDecoder } from './byte-fallback-decoder.js'
import { createByteLevelDecoder } from './byte-level-decoder.js'
import { createCtcDecoder } from './ctc-decoder.js'
import type { Decoder } from './decoder.js'
import { createFuseDecoder } from './fuse-decoder.js'
import { createMetaspaceDecoder } from './metaspace-decoder.js'
import { createReplaceDecoder } from './replace-decoder.js'
import { createSequenceDecoder } from './sequence-decoder.js'
import { createStripDecoder } from './strip-decoder.js'
import { createWordPieceDecoder } from './word-piece-decoder.js'

const singleCharacter = z.string().refine((text) => Array.from(text).length === 1, 'must be a single character')

const builders: Record<string, ComponentBuilder<Decoder>> = {
  ByteLevel: () => createByteLevelDecoder(),
  Metaspace: (json, location) => {
    const options = parseJson(
      z.object({
        replacement: singleCharacter.default('▁'),
        prepend_scheme: z.enum(['always', 'first', 'never']).optional(),
        add_prefix_space: z.boolean().optional(),
      }),
      json,
      location,
    )
    if (options.add_prefix_space === false && options.prepend_scheme !== undefined && options.prepend_scheme !== 'never') {
      throw new ParseError({
        source: location.source,
        path: [...location.path, 'prepend_scheme'],
        message: 'add_prefix_space does not match declared prepend_scheme',
      })
    }
    return createMetaspaceDecoder(options.replacement, options.add_prefix_space === false ? 'never' : (options.prepend_scheme ?? 'always'))
  },
  ByteFallback: () => createByteFallbackDecoder(),
  Fuse: () => createFuseDecoder(),
  Strip: (json, location) => {
    const options = parseJson(
      z.object({ content: singleCharacter, start: z.number().int().nonnegative(), stop: z.number().int().nonnegative() }),
      json,
      location,
    )
    return createStripDecoder(options.content, options.start, options.stop)
  },
  Replace: (json, location) => {
    const options = parseJson(z.object({ pattern: stringOrRegexPatternSchema, content: z.string() }), json, location)
    return createReplaceDecoder(compileStringOrRegexPattern(options.pattern, childLocation(location, 'pattern')), options.content)
  },
  WordPiece: (json, location) => {
    const options = parseJson(z.object({ prefix: z.string().default('##'), cleanup: z.boolean().default(true) }), json, location)
    return createWordPieceDecoder(options.prefix, options.cleanup)
  },
  BPEDecoder: (json, location) => createBpeDecoder(parseJson(z.object({ suffix: z.string().default('</w>') }), json, location).suffix),
  CTC: (json, location) => {
    const options = parseJson(
      z.object({ pad_token: z.string().default('<pad>'), word_delimiter_token: z.string().default('|'), cleanup: z.boolean().default(true) }),
      json,
      location,
    )
    return createCtcDecoder(options.pad_token, options.word_delimiter_token, options.cleanup)
  },
  Sequence: (json, location, limits) => {
    const items = readSequenceItems('decoder', 'decoders', json, location, limits)
    return createSequenceDecoder(
      items.map((item, index) => createDecoder(item, childLocation(location, 'decoders', index), limits)),
      location,
      limits,
    )
  },
}

/** Builds the decoder of a `tokenizer.json` (its `decoder` field) from its JSON. */
export function createDecoder(json: unknown, location: JsonLocation, limits: TokenizerLimits = defaultTokenizerLimits): Decoder {
  return buildComponent('decoder', builders, json, location, limits)
}
