import { z } from 'zod'

/**
 * Bounds on a character card read from outside. Every text field, list and the character book are
 * checked before anything is built from them; unknown fields are kept as they are (bounded only by
 * `maxCardCharacters` when the card comes as JSON text).
 */
export const characterCardLimitsSchema = z.strictObject({
  /**
   * Most characters of one text field (description, first_mes, a book entry's content…). Default 64 KiB, which
   * is also the most a `Character`'s own text fields hold whatever this limit.
   */
  maxTextCharacters: z
    .number()
    .int()
    .positive()
    .default(64 * 1024),
  /**
   * Most characters of the name and V3's nickname: each `{{char}}` placeholder becomes the name, so a long one
   * multiplies the prompt (see `renderCharacterPrompt`'s `maxCharacters`). Default 8 Ki, which is also the most a
   * `Character`'s name holds whatever this limit.
   */
  maxNameCharacters: z
    .number()
    .int()
    .positive()
    .default(8 * 1024),
  /** Most items of one list (tags, greetings, sources, assets, a book entry's keys). Default 1,000. */
  maxListItems: z.number().int().positive().default(1000),
  /** Most entries of the character book. Default 1,000. */
  maxBookEntries: z.number().int().positive().default(1000),
  /** Deepest nesting of objects and arrays anywhere in the card (unknown fields included). Default: 64. */
  maxDepth: z.number().int().positive().max(10_000).default(64),
  /** Most characters of a card given as JSON text. Default 16 MiB (in UTF-16 code units). */
  maxCardCharacters: z
    .number()
    .int()
    .positive()
    .default(16 * 1024 * 1024),
})
export type CharacterCardLimits = z.input<typeof characterCardLimitsSchema>
type ResolvedLimits = z.output<typeof characterCardLimitsSchema>

/** Builds the Character Card V2 and V3 schemas under the given limits. Unknown fields pass through everywhere. */
export function createCharacterCardSchemas(limits: ResolvedLimits) {
  const text = z.string().max(limits.maxTextCharacters, `must be at most ${limits.maxTextCharacters} characters (limits.maxTextCharacters)`)
  const name = z.string().max(limits.maxNameCharacters, `must be at most ${limits.maxNameCharacters} characters (limits.maxNameCharacters)`)
  const list = <Item extends z.ZodType>(item: Item) =>
    z.array(item).max(limits.maxListItems, `must have at most ${limits.maxListItems} items (limits.maxListItems)`)
  /** Arbitrary JSON key-value pairs, namespaced by application (`extensions.ludic` is ours). */
  const extensions = z.record(z.string(), z.unknown())

  // Character Card V2 spec (malfoyslastname/character-card-spec-v2, spec_v2.md), CharacterBook entries;
  // V3 (kwaroran/character-card-spec-v3, SPEC_V3.md) adds `use_regex` (required) and `case_sensitive`. An entry's `id` is a
  // number in V2 and a string in V3; both are read in either (cards in the wild mix them).
  const bookEntryShape = {
    keys: list(text),
    content: text,
    extensions,
    enabled: z.boolean(),
    insertion_order: z.number(),
    case_sensitive: z.boolean().optional(),
    name: text.optional(),
    priority: z.number().optional(),
    comment: text.optional(),
    selective: z.boolean().optional(),
    secondary_keys: list(text).optional(),
    constant: z.boolean().optional(),
    position: z.enum(['before_char', 'after_char']).optional(),
  }
  const bookShape = {
    name: text.optional(),
    description: text.optional(),
    scan_depth: z.number().optional(),
    token_budget: z.number().optional(),
    recursive_scanning: z.boolean().optional(),
    extensions,
  }
  const entries = <Entry extends z.ZodType>(entry: Entry) =>
    z.array(entry).max(limits.maxBookEntries, `must have at most ${limits.maxBookEntries} entries (limits.maxBookEntries)`)
  const characterBookV2 = z.looseObject({
    ...bookShape,
    entries: entries(z.looseObject({ ...bookEntryShape, id: z.union([z.number(), z.string()]).optional() })),
  })
  const characterBookV3 = z.looseObject({
    ...bookShape,
    entries: entries(z.looseObject({ ...bookEntryShape, use_regex: z.boolean(), id: z.union([z.number(), z.string()]).optional() })),
  })

  const dataV2Shape = {
    name: name.min(1, 'must not be empty'),
    description: text,
    personality: text,
    scenario: text,
    first_mes: text,
    mes_example: text,
    creator_notes: text,
    system_prompt: text,
    post_history_instructions: text,
    alternate_greetings: list(text),
    tags: list(text),
    creator: text,
    character_version: text,
    extensions,
  }
  const v2 = z.looseObject({
    spec: z.literal('chara_card_v2'),
    spec_version: z.literal('2.0'),
    data: z.looseObject({ ...dataV2Shape, character_book: characterBookV2.optional() }),
  })
  const v3 = z.looseObject({
    spec: z.literal('chara_card_v3'),
    /** The spec asks applications not to reject other versions ("3.0" today), so any version string is read. */
    spec_version: z.string().min(1).max(16),
    data: z.looseObject({
      ...dataV2Shape,
      character_book: characterBookV3.optional(),
      assets: list(z.looseObject({ type: text, uri: z.string(), name: text, ext: text })).optional(),
      nickname: name.optional(),
      creator_notes_multilingual: z.record(z.string().max(16), text).optional(),
      source: list(text).optional(),
      group_only_greetings: list(text),
      creation_date: z.number().optional(),
      modification_date: z.number().optional(),
    }),
  })
  return { v2, v3 }
}

const defaultSchemas = createCharacterCardSchemas(characterCardLimitsSchema.parse({}))

/** Character Card V2 (`spec: 'chara_card_v2'`, `spec_version: '2.0'`) under the default limits. */
export const characterCardV2Schema = defaultSchemas.v2
/** Character Card V3 (`spec: 'chara_card_v3'`) under the default limits. */
export const characterCardV3Schema = defaultSchemas.v3

export type CharacterCardV2 = z.output<typeof characterCardV2Schema>
export type CharacterCardV3 = z.output<typeof characterCardV3Schema>
export type CharacterCard = CharacterCardV2 | CharacterCardV3

/** The card format versions Ludic reads and writes. */
export const characterCardVersionSchema = z.enum(['v2', 'v3'])
export type CharacterCardVersion = z.infer<typeof characterCardVersionSchema>
