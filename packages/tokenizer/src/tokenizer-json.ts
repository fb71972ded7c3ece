import { z } from 'zod'

/** An entry of `added_tokens` in `tokenizer.json`; missing flags take Rust's defaults. */
export const addedTokenJsonSchema = z.object({
  id: z.number().int().nonnegative(),
  content: z.string().min(1, 'an added token cannot be empty'),
  single_word: z.boolean().default(false),
  lstrip: z.boolean().default(false),
  rstrip: z.boolean().default(false),
  normalized: z.boolean().default(true),
  special: z.boolean().default(false),
})
export type AddedTokenJson = z.infer<typeof addedTokenJsonSchema>

const count = z.number().int().nonnegative()

/** `truncation` (Rust's `TruncationParams`): its sizes are checked, the rest kept as it is. */
const truncationSchema = z.object({ max_length: count.optional(), stride: count.optional() }).loose()

/** `padding` (Rust's `PaddingParams`): its sizes and ids are checked (`pad_id` also against the id limit, by `Tokenizer.fromJSON`). */
const paddingSchema = z
  .object({
    strategy: z.union([z.literal('BatchLongest'), z.object({ Fixed: count })]).optional(),
    pad_to_multiple_of: count.nullable().optional(),
    pad_id: count.optional(),
    pad_type_id: count.optional(),
  })
  .loose()

/**
 * The top level of a Hugging Face `tokenizer.json`. Components stay `unknown` here: each stage's
 * factory parses its own (and names unsupported types). `truncation` and `padding` are accepted and
 * ignored: they are batching settings, not part of encoding one text (their numbers are checked all the same).
 */
export const tokenizerJsonSchema = z.object({
  version: z.string().optional(),
  truncation: truncationSchema.nullable().optional(),
  padding: paddingSchema.nullable().optional(),
  added_tokens: z.array(addedTokenJsonSchema).default([]),
  normalizer: z.unknown().nullable().default(null),
  pre_tokenizer: z.unknown().nullable().default(null),
  model: z.unknown().refine((model) => typeof model === 'object' && model !== null, 'a tokenizer needs a model object'),
  post_processor: z.unknown().nullable().default(null),
  decoder: z.unknown().nullable().default(null),
})
export type TokenizerJson = z.input<typeof tokenizerJsonSchema>

/** A special token in `tokenizer_config.json`: its content, or an AddedToken object with `content`. */
const specialTokenSchema = z
  .union([z.string(), z.object({ content: z.string() }).loose()])
  .nullable()
  .optional()
  .transform((token) => (token === null || token === undefined ? undefined : typeof token === 'string' ? token : token.content))

/** The fields of `tokenizer_config.json` this package uses; the others are kept and ignored. */
export const tokenizerConfigSchema = z
  .object({
    bos_token: specialTokenSchema,
    eos_token: specialTokenSchema,
    pad_token: specialTokenSchema,
    unk_token: specialTokenSchema,
    additional_special_tokens: z.array(z.union([z.string(), z.object({ content: z.string() }).loose()])).optional(),
    chat_template: z
      .union([z.string(), z.array(z.object({ name: z.string(), template: z.string() }))])
      .nullable()
      .optional(),
    clean_up_tokenization_spaces: z.boolean().optional(),
  })
  .loose()
export type TokenizerConfig = z.input<typeof tokenizerConfigSchema>
export type ParsedTokenizerConfig = z.output<typeof tokenizerConfigSchema>
