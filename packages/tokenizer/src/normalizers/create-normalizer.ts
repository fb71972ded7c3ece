import { z } from 'zod'
import { buildComponent, childLocation, parseJson, readSequenceItems, type ComponentBuilder, type JsonLocation } from '../json-location.js'
import { defaultTokenizerLimits, type TokenizerLimits } from '../tokenizer-limits.js'
import { compileStringOrRegexPattern, stringOrRegexPatternSchema } from '../regex/string-or-regex-pattern.js'
import { createBertNormalizer } from './bert-normalizer.js'
import { createByteLevelNormalizer } from './byte-level-normalizer.js'
import { createLowercase } from './lowercase.js'
import { createNmt } from './nmt.js'
import type { Normalizer } from './normalizer.js'
import { createPrecompiled } from './precompiled.js'
import { createPrepend } from './prepend.js'
import { createReplace } from './replace.js'
import { createSequenceNormalizer } from './sequence-normalizer.js'
import { createStrip } from './strip.js'
import { createStripAccents } from './strip-accents.js'
import { createUnicodeNormalization } from './unicode-normalization.js'

const builders: Record<string, ComponentBuilder<Normalizer>> = {
  NFC: () => createUnicodeNormalization('NFC'),
  NFD: () => createUnicodeNormalization('NFD'),
  NFKC: () => createUnicodeNormalization('NFKC'),
  NFKD: () => createUnicodeNormalization('NFKD'),
  Lowercase: () => createLowercase(),
  Strip: (json, location) => {
    const options = parseJson(z.object({ strip_left: z.boolean().default(true), strip_right: z.boolean().default(true) }), json, location)
    return createStrip({ left: options.strip_left, right: options.strip_right })
  },
  StripAccents: () => createStripAccents(),
  Replace: (json, location) => {
    const options = parseJson(z.object({ pattern: stringOrRegexPatternSchema, content: z.string() }), json, location)
    return createReplace(compileStringOrRegexPattern(options.pattern, childLocation(location, 'pattern')), options.content)
  },
  Prepend: (json, location) => createPrepend(parseJson(z.object({ prepend: z.string() }), json, location).prepend),
  BertNormalizer: (json, location) => {
    const options = parseJson(
      z.object({
        clean_text: z.boolean().default(true),
        handle_chinese_chars: z.boolean().default(true),
        strip_accents: z.boolean().nullable().default(null),
        lowercase: z.boolean().default(true),
      }),
      json,
      location,
    )
    return createBertNormalizer({
      cleanText: options.clean_text,
      handleChineseChars: options.handle_chinese_chars,
      stripAccents: options.strip_accents,
      lowercase: options.lowercase,
    })
  },
  Nmt: () => createNmt(),
  Precompiled: (json, location) => {
    const { precompiled_charsmap: charsmap } = parseJson(
      z.object({
        precompiled_charsmap: z
          .string()
          .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64')
          .refine((text) => text.length % 4 !== 1 && (!text.endsWith('=') || text.length % 4 === 0), 'must be base64 (its length does not fit)')
          .nullable()
          .default(null),
      }),
      json,
      location,
    )
    return createPrecompiled(charsmap === null ? undefined : decodeBase64(charsmap), childLocation(location, 'precompiled_charsmap'))
  },
  ByteLevel: () => createByteLevelNormalizer(),
  Sequence: (json, location, limits) => {
    const items = readSequenceItems('normalizer', 'normalizers', json, location, limits)
    return createSequenceNormalizer(
      items.map((item, index) => createNormalizer(item, childLocation(location, 'normalizers', index), limits)),
      location,
      limits,
    )
  },
}

/** Builds the normalizer of a `tokenizer.json` (its `normalizer` field) from its JSON. */
export function createNormalizer(json: unknown, location: JsonLocation, limits: TokenizerLimits = defaultTokenizerLimits): Normalizer {
  return buildComponent('normalizer', builders, json, location, limits)
}

/** Base64 to bytes with `atob`, which browsers and Node both have (Node's `Buffer` is not in a browser). */
function decodeBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (character) => character.charCodeAt(0))
}
