import { ParseError } from '@ludic/core'
import { z } from 'zod'
import { buildComponent, childLocation, parseJson, readSequenceItems, type ComponentBuilder, type JsonLocation } from '../json-location.js'
import { defaultTokenizerLimits, type TokenizerLimits } from '../tokenizer-limits.js'
import { compileStringOrRegexPattern, stringOrRegexPatternSchema } from '../regex/string-or-regex-pattern.js'
import { createBertPreTokenizer } from './bert-pre-tokenizer.js'
import { createByteLevelPreTokenizer } from './byte-level-pre-tokenizer.js'
import { createCharDelimiterSplit } from './char-delimiter-split.js'
import { createDigits } from './digits.js'
import { createFixedLength } from './fixed-length.js'
import { createMetaspace } from './metaspace.js'
import type { PreTokenizer } from './pre-tokenizer.js'
import { createPunctuation } from './punctuation.js'
import { createSequencePreTokenizer } from './sequence-pre-tokenizer.js'
import { createSplit } from './split.js'
import { splitBehaviors } from './split-behavior.js'
import { createUnicodeScripts } from './unicode-scripts.js'
import { createWhitespace, createWhitespaceSplit } from './whitespace.js'

const behaviorSchema = z.enum(splitBehaviors)
const singleCharacter = z.string().refine((text) => Array.from(text).length === 1, 'must be a single character')

const builders: Record<string, ComponentBuilder<PreTokenizer>> = {
  ByteLevel: (json, location) => {
    const options = parseJson(z.object({ add_prefix_space: z.boolean().default(true), use_regex: z.boolean().default(true) }), json, location)
    return createByteLevelPreTokenizer({ addPrefixSpace: options.add_prefix_space, useRegex: options.use_regex })
  },
  Split: (json, location) => {
    const options = parseJson(z.object({ pattern: stringOrRegexPatternSchema, behavior: behaviorSchema, invert: z.boolean().default(false) }), json, location)
    return createSplit(compileStringOrRegexPattern(options.pattern, childLocation(location, 'pattern')), options.behavior, options.invert)
  },
  Metaspace: (json, location) => {
    const options = parseJson(
      z.object({
        replacement: singleCharacter.default('▁'),
        prepend_scheme: z.enum(['always', 'first', 'never']).optional(),
        add_prefix_space: z.boolean().optional(),
        split: z.boolean().default(true),
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
    const prependScheme = options.add_prefix_space === false ? 'never' : (options.prepend_scheme ?? 'always')
    return createMetaspace({ replacement: options.replacement, prependScheme, split: options.split })
  },
  Whitespace: () => createWhitespace(),
  WhitespaceSplit: () => createWhitespaceSplit(),
  Punctuation: (json, location) => createPunctuation(parseJson(z.object({ behavior: behaviorSchema.default('Isolated') }), json, location).behavior),
  Digits: (json, location) => createDigits(parseJson(z.object({ individual_digits: z.boolean().default(false) }), json, location).individual_digits),
  BertPreTokenizer: () => createBertPreTokenizer(),
  CharDelimiterSplit: (json, location) => createCharDelimiterSplit(parseJson(z.object({ delimiter: singleCharacter }), json, location).delimiter),
  UnicodeScripts: () => createUnicodeScripts(),
  FixedLength: (json, location) => createFixedLength(parseJson(z.object({ length: z.number().int().positive().default(5) }), json, location).length),
  Sequence: (json, location, limits) => {
    const items = readSequenceItems('pre-tokenizer', 'pretokenizers', json, location, limits)
    return createSequencePreTokenizer(
      items.map((item, index) => createPreTokenizer(item, childLocation(location, 'pretokenizers', index), limits)),
      location,
    )
  },
}

/** Builds the pre-tokenizer of a `tokenizer.json` (its `pre_tokenizer` field) from its JSON. */
export function createPreTokenizer(json: unknown, location: JsonLocation, limits: TokenizerLimits = defaultTokenizerLimits): PreTokenizer {
  return buildComponent('pre-tokenizer', builders, json, location, limits)
}
