import { ParseError } from '@ludic/core'
import { z } from 'zod'
import { buildComponent, childLocation, parseJson, type ComponentBuilder, type JsonLocation } from '../json-location.js'
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

const identity: PostProcessor = { addedTokenCount: 0, process: (ids) => ids }

const builders: Record<string, ComponentBuilder<PostProcessor>> = {
  TemplateProcessing: (json, location) => {
    const options = parseJson(
      z.object({
        single: z.array(templateItemSchema),
        pair: z.array(templateItemSchema).optional(),
        special_tokens: z.record(z.string(), specialTokenSchema).default({}),
      }),
      json,
      location,
    )
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
  BertProcessing: (json, location) => {
    const options = parseJson(z.object({ sep: tokenAndIdSchema, cls: tokenAndIdSchema }), json, location)
    return createClsSepProcessing(options.cls[1], options.sep[1])
  },
  RobertaProcessing: (json, location) => {
    const options = parseJson(z.object({ sep: tokenAndIdSchema, cls: tokenAndIdSchema }), json, location)
    return createClsSepProcessing(options.cls[1], options.sep[1])
  },
  Sequence: (json, location) => {
    const { processors } = parseJson(z.object({ processors: z.array(z.unknown()) }), json, location)
    return createSequencePostProcessor(processors.map((item, index) => createPostProcessor(item, childLocation(location, 'processors', index))))
  },
}

/** Builds the post-processor of a `tokenizer.json` (its `post_processor` field) from its JSON. */
export function createPostProcessor(json: unknown, location: JsonLocation): PostProcessor {
  return buildComponent('post-processor', builders, json, location)
}
