import { z } from 'zod'

const maxText = 64 * 1024
const text = z.string().max(maxText, `must be at most ${maxText} characters`)
const shortText = z.string().min(1, 'must not be empty').max(1000, 'must be at most 1,000 characters')
const list = <Item extends z.ZodType>(item: Item) => z.array(item).max(1000, 'must have at most 1,000 items')

export const characterRelationSchema = z.strictObject({
  /** Who: `'Old Maud'`. */
  name: shortText,
  /** What they are to the character: `'sister, runs the harbour café'`. */
  relationship: shortText,
})
export type CharacterRelation = z.infer<typeof characterRelationSchema>

/**
 * What a Character keeps of the card it was imported from, so that exporting it gives the card back:
 * the top-level fields other than `spec` and `data`, the data fields Ludic does not map (creator notes,
 * the character book, alternate greetings, V3's fields, unknown ones) with `extensions` less `ludic`,
 * and the `ludic` extension as read (its unknown keys are written back).
 */
export const cardRemainderSchema = z.strictObject({
  spec: z.enum(['chara_card_v2', 'chara_card_v3']),
  topLevel: jsonObject(),
  data: jsonObject(),
  ludic: jsonObject().optional(),
})

/** A plain object, passed through as it is (a record schema would rebuild it and lose keys such as `__proto__`). */
function jsonObject() {
  return z.custom<Record<string, unknown>>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), { message: 'must be an object' })
}
export type CardRemainder = z.infer<typeof cardRemainderSchema>

/**
 * Ludic's fields beyond Character Card V2, stored in a card under `data.extensions.ludic`. Every field
 * may be absent there (a card from elsewhere has none); the defaults are those of `characterSchema`.
 */
export const ludicCardExtensionShape = {
  /** Stable id (file names, episode `characterId`). Default: the name in lower case, words joined by '-'. */
  id: z
    .string()
    .min(1, 'must not be empty')
    .max(200, 'must be at most 200 characters')
    .regex(/^[\p{L}\p{N}][\p{L}\p{N}_.-]*$/u, 'must be letters, digits, "_", "." and "-", starting with a letter or digit'),
  /** How the character talks, in a few words: `'clipped sentences, sea words, calls everyone "friend"'`. */
  speakingStyle: text,
  /** Topics the character must not know (refuse or deflect in character): `['electricity', 'germs']`. */
  knowledgeBoundary: list(shortText),
  relations: list(characterRelationSchema),
  /** BCP 47 language tag of the character's replies. */
  language: z
    .string()
    .max(35)
    .regex(/^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*$/, 'must be a BCP 47 language tag such as "en" or "pt-BR"'),
  /** Short in-character replies (dialogue synthesis, style checks). */
  sampleLines: list(text),
  /** Words characteristic of the character's speech; the `inCharacter` rule counts them. */
  signatureWords: list(shortText),
}

/** The `data.extensions.ludic` object of a card: Ludic's fields, each optional; unknown keys are kept. */
export const ludicCardExtensionSchema = z.looseObject({
  id: ludicCardExtensionShape.id.optional(),
  speakingStyle: ludicCardExtensionShape.speakingStyle.optional(),
  knowledgeBoundary: ludicCardExtensionShape.knowledgeBoundary.optional(),
  relations: ludicCardExtensionShape.relations.optional(),
  language: ludicCardExtensionShape.language.optional(),
  sampleLines: ludicCardExtensionShape.sampleLines.optional(),
  signatureWords: ludicCardExtensionShape.signatureWords.optional(),
})

/**
 * Ludic's character: the Character Card V2 fields a prompt needs, in camelCase, plus Ludic's additions.
 * Write one by hand (only `id` and `name` are required) or get one from `importCharacterCard`.
 */
export const characterSchema = z.strictObject({
  id: ludicCardExtensionShape.id,
  /** At most 8 Ki characters: every `{{char}}` placeholder of the card's texts becomes the name. */
  name: z
    .string()
    .min(1, 'must not be empty')
    .max(8 * 1024, `must be at most ${8 * 1024} characters`),
  description: text.default(''),
  personality: text.default(''),
  /** The default scenario (the environment's `scenario` option overrides it). */
  scenario: text.default(''),
  /** The card's `first_mes`. */
  greeting: text.default(''),
  /** The card's `mes_example`. */
  exampleDialogue: text.default(''),
  /** The card's `system_prompt`: put before the rendered prompt when not empty. */
  systemPrompt: text.default(''),
  tags: list(text).default([]),
  speakingStyle: ludicCardExtensionShape.speakingStyle.default(''),
  knowledgeBoundary: ludicCardExtensionShape.knowledgeBoundary.default([]),
  relations: ludicCardExtensionShape.relations.default([]),
  /** Default: `'en'`. */
  language: ludicCardExtensionShape.language.default('en'),
  sampleLines: ludicCardExtensionShape.sampleLines.default([]),
  signatureWords: ludicCardExtensionShape.signatureWords.default([]),
  /** Set by `importCharacterCard`: the rest of the source card, written back by `exportCharacterCard`. */
  card: cardRemainderSchema.optional(),
})
/** A character as written by hand (defaults may be left out). */
export type CharacterInput = z.input<typeof characterSchema>
/** A character with every default filled in. */
export type Character = z.output<typeof characterSchema>

/** The id a character gets from its name when its card has none: `'Captain Ida Marsh'` → `'captain-ida-marsh'`. */
export function defaultCharacterId(name: string): string {
  const slug = name
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 200)
    .replace(/-+$/, '')
  return slug === '' ? 'character' : slug
}
