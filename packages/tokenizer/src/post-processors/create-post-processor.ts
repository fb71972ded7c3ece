import { ParseError } from '@ludic/core'
import { z } from 'zod'
import { buildComponent, childLocation, parseJson, readSequenceItems, type ComponentBuilder, type JsonLocation } from '../json-location.js'
import { checkTokenId, defaultTokenizerLimits, type TokenizerLimits } from '../tokenizer-limits.js'
import { createClsSepProcessing } from './cls-sep-processing.js'
import type { PostProcessor } from './post-processor.js'
import { createSequencePostProcessor } from './sequence-post-processor.js'
import { createTemplateProcessing, type TemplateItem } from './template-processing.js'

const templateItemSchema = z.union([
  z.object({ SpecialToken: z.object({ id: z.string(), type_id: z.number().int().default(0) }) }),
  z.object({ Sequence: z.object({ id: z.enum(['A', 'B']), type_id: z.number().int().default(0) }) }),
])
const specialTokenSchema = z.object({ id: z.string(), ids: z.array(z.number().int().nonnegative()), tokens: z.array(z.string()) })
const tokenAndIdSchema = z.tuple([z.string(), z.number().int().nonnegative()])

/** `BertProcessing` and `RobertaProcessing`: `[token, id]` pairs for `cls` and `sep`. */
function createClsSep(json: unknown, location: JsonLocation, limits: TokenizerLimits): PostProcessor {
  const options = parseJson(z.object({ sep: tokenAndIdSchema, cls: tokenAndIdSchema }), json, location)
  checkTokenId(options.cls[1], childLocation(location, 'cls', 1), limits)
  checkTokenId(options.sep[1], childLocation(location, 'sep', 1), limits)
  return createClsSepProcessing(options.cls[1], options.sep[1])
}

const identity: PostProcessor = { addedTokenCount: 0, process: (ids) => ids }

const builders: Record<string, ComponentBuilder<PostProcessor>> = {
  TemplateProcessing: (json, location, limits) => {
    const options = parseJson(
      z.object({
        single: z.array(templateItemSchema),
        pair: z.array(templateItemSchema).optional(),
        special_tokens: z.record(z.string(), specialTokenSchema).default({}),
      }),
      json,
      location,
    )
    for (const [name, special] of Object.entries(options.special_tokens)) {
      special.ids.forEach((id, index) => checkTokenId(id, childLocation(location, 'special_tokens', name, 'ids', index), limits))
    }
    const items: TemplateItem[] = options.single.map((item, index) => {
      if ('Sequence' in item) return { kind: 'sequence' }
      const special = options.special_tokens[item.SpecialToken.id]
      if (special === undefined) {
        throw new ParseError({
          source: location.source,
          path: [...location.path, 'single', index, 'SpecialToken', 'id'],
          message: `the special token ${JSON.stringify(item.SpecialToken.id)} is not in special_tokens`,
        })
      }
      return { kind: 'special', ids: special.ids }
    })
    return createTemplateProcessing(items)
  },
  ByteLevel: () => identity,
  BertProcessing: (json, location, limits) => createClsSep(json, location, limits),
  RobertaProcessing: (json, location, limits) => createClsSep(json, location, limits),
  Sequence: (json, location, limits) => {
    const items = readSequenceItems('post-processor', 'processors', json, location, limits)
    return createSequencePostProcessor(items.map((item, index) => createPostProcessor(item, childLocation(location, 'processors', index), limits)))
  },
}

/** Builds the post-processor of a `tokenizer.json` (its `post_processor` field) from its JSON. */
export function createPostProcessor(json: unknown, location: JsonLocation, limits: TokenizerLimits = defaultTokenizerLimits): PostProcessor {
  return buildComponent('post-processor', builders, json, location, limits)
}
