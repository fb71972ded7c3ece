import { InvalidArgumentError, ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { characterCardV2Schema, characterCardV3Schema } from './character-card.js'
import { exportCharacterCard, importCharacterCard } from './import-character-card.js'

/** A V2 card with unknown fields at every level: top, data, extensions, the book and its entries. */
const cardV2 = () => ({
  spec: 'chara_card_v2',
  spec_version: '2.0',
  unknown_top: { nested: [1, 2, { deep: true }] },
  data: {
    name: 'Hester Vane',
    description: 'A ferrywoman on the river Wend.',
    personality: 'terse, kind',
    scenario: 'Dawn at the crossing.',
    first_mes: 'Fare is one copper, {{user}}.',
    mes_example: '<START>\n{{user}}: Is it deep?\n{{char}}: Deep enough.',
    creator_notes: 'notes',
    system_prompt: '',
    post_history_instructions: 'stay terse',
    alternate_greetings: ['Mind the rope.'],
    character_book: {
      name: 'River lore',
      extensions: { other_app: { x: 1 } },
      entries: [
        { keys: ['weir'], content: 'The weir is upstream.', extensions: {}, enabled: true, insertion_order: 0, id: 7, unknown_entry_field: 'kept' },
        { keys: ['ford'], content: 'No ford for miles.', extensions: { depth: 2 }, enabled: false, insertion_order: 1, position: 'after_char' },
      ],
      unknown_book_field: [null],
    },
    tags: ['river'],
    creator: 'someone',
    character_version: '3',
    extensions: {
      other_app: { voice: 'low' },
      ludic: { speakingStyle: 'few words', knowledgeBoundary: ['steam engines'], language: 'en', future_ludic_field: 1 },
    },
    unknown_data_field: 'kept too',
  },
})

const cardV3 = () => ({
  spec: 'chara_card_v3',
  spec_version: '3.0',
  x_top: 'kept',
  data: {
    name: 'Orrin',
    description: 'A clockmaker.',
    personality: 'fussy',
    scenario: '',
    first_mes: 'Tick, tock. Yes?',
    mes_example: '',
    creator_notes: '',
    system_prompt: 'Speak in riddles.',
    post_history_instructions: '',
    alternate_greetings: [],
    group_only_greetings: ['Welcome, all of you.'],
    nickname: 'Orr',
    creator_notes_multilingual: { en: 'hi', fr: 'salut' },
    source: ['https://example.com/orrin'],
    creation_date: 1700000000,
    modification_date: 0,
    assets: [{ type: 'icon', uri: 'ccdefault:', name: 'main', ext: 'png', x_asset: 1 }],
    character_book: {
      extensions: {},
      entries: [{ keys: ['gear'], content: 'Gears.', extensions: {}, enabled: true, insertion_order: 0, use_regex: false, id: 'g1', x_entry: [1] }],
    },
    tags: [],
    creator: '',
    character_version: '',
    extensions: { ludic: { id: 'orrin-the-clockmaker', signatureWords: ['tick', 'tock'] } },
    x_data: { a: 1 },
  },
})

describe('importCharacterCard', () => {
  it('maps the V2 fields and Ludic extension to a Character', () => {
    const character = importCharacterCard(cardV2())
    expect(character).toMatchObject({
      id: 'hester-vane',
      name: 'Hester Vane',
      description: 'A ferrywoman on the river Wend.',
      greeting: 'Fare is one copper, {{user}}.',
      exampleDialogue: '<START>\n{{user}}: Is it deep?\n{{char}}: Deep enough.',
      systemPrompt: '',
      tags: ['river'],
      speakingStyle: 'few words',
      knowledgeBoundary: ['steam engines'],
      relations: [],
      language: 'en',
    })
  })

  it('round-trips V2 and V3 cards with unknown fields at every level', () => {
    for (const [make, version] of [
      [cardV2, 'v2'],
      [cardV3, 'v3'],
    ] as const) {
      const card = make()
      const character = importCharacterCard(card)
      expect(exportCharacterCard(character, { version })).toStrictEqual(make())
      expect(importCharacterCard(JSON.stringify(card))).toStrictEqual(character)
    }
  })

  it('round-trips a card without a ludic extension (none is added back)', () => {
    const card = cardV2()
    delete (card.data.extensions as { ludic?: unknown }).ludic
    expect(exportCharacterCard(importCharacterCard(card), { version: 'v2' })).toStrictEqual(card)
  })

  it('writes changed Ludic fields, keeping unknown keys of the extension', () => {
    const character = { ...importCharacterCard(cardV2()), relations: [{ name: 'Tom', relationship: 'brother' }] }
    const exported = exportCharacterCard(character, { version: 'v2' })
    expect(exported.data.extensions.ludic).toEqual({
      speakingStyle: 'few words',
      knowledgeBoundary: ['steam engines'],
      language: 'en',
      future_ludic_field: 1,
      relations: [{ name: 'Tom', relationship: 'brother' }],
    })
  })

  it('converts between versions: V3 gets use_regex and group_only_greetings, V2 output is a valid V2 card', () => {
    const asV3 = exportCharacterCard(importCharacterCard(cardV2()), { version: 'v3' })
    expect(characterCardV3Schema.safeParse(asV3).success).toBe(true)
    expect(asV3.spec_version).toBe('3.0')
    expect(asV3.data.group_only_greetings).toEqual([])
    expect(asV3.data.character_book?.entries.every((entry) => entry.use_regex === false)).toBe(true)
    const asV2 = exportCharacterCard(importCharacterCard(cardV3()), { version: 'v2' })
    expect(characterCardV2Schema.safeParse(asV2).success).toBe(true)
    expect(asV2.spec_version).toBe('2.0')
    expect(importCharacterCard(asV2)).toMatchObject({ id: 'orrin-the-clockmaker', systemPrompt: 'Speak in riddles.', signatureWords: ['tick', 'tock'] })
  })

  it('exports a hand-written character with the spec defaults and every Ludic field', () => {
    const card = exportCharacterCard({ id: 'wren', name: 'Wren', knowledgeBoundary: ['cars'] }, { version: 'v2' })
    expect(card).toEqual({
      spec: 'chara_card_v2',
      spec_version: '2.0',
      data: {
        name: 'Wren',
        description: '',
        personality: '',
        scenario: '',
        first_mes: '',
        mes_example: '',
        creator_notes: '',
        system_prompt: '',
        post_history_instructions: '',
        alternate_greetings: [],
        tags: [],
        creator: '',
        character_version: '',
        extensions: {
          ludic: { id: 'wren', speakingStyle: '', knowledgeBoundary: ['cars'], relations: [], language: 'en', sampleLines: [], signatureWords: [] },
        },
      },
    })
    expect(importCharacterCard(card)).toMatchObject({ id: 'wren', name: 'Wren', knowledgeBoundary: ['cars'] })
  })

  it('does not share objects with the input or the output', () => {
    const card = cardV2()
    const character = importCharacterCard(card)
    card.data.character_book.entries[0]!.keys.push('mutated')
    const exported = exportCharacterCard(character, { version: 'v2' })
    expect(exported).toStrictEqual(cardV2())
    exported.data.alternate_greetings.push('mutated')
    expect(exportCharacterCard(character, { version: 'v2' })).toStrictEqual(cardV2())
  })

  it('reads empty and long tags and names as the card spec allows', () => {
    const card = cardV2()
    card.data.tags = ['', 't'.repeat(5000)]
    card.data.name = 'n'.repeat(5000)
    expect(exportCharacterCard(importCharacterCard(card), { version: 'v2' })).toStrictEqual(card)
  })

  it('names the bad field of an invalid card', () => {
    const cases: [unknown, RegExp][] = [
      [{ ...cardV2(), spec: 'chara_card_v9' }, /at spec: must be 'chara_card_v2' or 'chara_card_v3'/],
      [{ ...cardV2(), spec_version: '2.1' }, /at spec_version/],
      [{ ...cardV2(), data: { ...cardV2().data, first_mes: 42 } }, /at data\.first_mes/],
      [{ ...cardV2(), data: { ...cardV2().data, name: '' } }, /at data\.name: must not be empty/],
      [{ ...cardV3(), data: { ...cardV3().data, group_only_greetings: undefined } }, /at data\.group_only_greetings/],
      [{ ...cardV2(), data: { ...cardV2().data, extensions: { ludic: { knowledgeBoundary: 'cars' } } } }, /at data\.extensions\.ludic\.knowledgeBoundary/],
      [{ ...cardV2(), data: { ...cardV2().data, extensions: { ludic: { id: 'has space' } } } }, /at data\.extensions\.ludic\.id/],
      ['{"spec": ', /not JSON/],
      [[], /must be a JSON object/],
      [null, /must be a JSON object/],
    ]
    for (const [card, message] of cases) {
      expect(() => importCharacterCard(card)).toThrow(ParseError)
      expect(() => importCharacterCard(card)).toThrow(message)
    }
  })

  it('bounds text fields, lists, book entries and JSON text by the limits', () => {
    const long = cardV2()
    long.data.description = 'x'.repeat(65 * 1024)
    expect(() => importCharacterCard(long)).toThrow(/data\.description: must be at most 65536 characters \(limits\.maxTextCharacters\)/)
    // The 98 KB card: a 65,536-character name that {{char}} × 4,000 multiplied into 262 million characters.
    const named = cardV2()
    named.data.name = 'n'.repeat(65_536)
    named.data.description = '{{char}}'.repeat(4000)
    expect(() => importCharacterCard(named)).toThrow(/at data\.name: must be at most 8192 characters \(limits\.maxNameCharacters\)/)
    expect(() => importCharacterCard({ ...cardV3(), data: { ...cardV3().data, nickname: 'n'.repeat(9000) } })).toThrow(
      /at data\.nickname.*limits\.maxNameCharacters/,
    )
    expect(() => importCharacterCard(cardV2(), { limits: { maxNameCharacters: 2 } })).toThrow(/at data\.name.*at most 2 characters/)
    const book = cardV2()
    book.data.character_book.entries = Array.from({ length: 1001 }, () => ({ ...cardV2().data.character_book.entries[0]! }))
    expect(() => importCharacterCard(book)).toThrow(/limits\.maxBookEntries/)
    expect(() => importCharacterCard(cardV2(), { limits: { maxListItems: 1 } })).not.toThrow()
    const tags = cardV2()
    tags.data.tags = ['a', 'b']
    expect(() => importCharacterCard(tags, { limits: { maxListItems: 1 } })).toThrow(/data\.tags: must have at most 1 items/)
    expect(() => importCharacterCard(JSON.stringify(cardV2()), { limits: { maxCardCharacters: 100 } })).toThrow(/limits\.maxCardCharacters/)
    expect(() => importCharacterCard(cardV2(), { limits: { maxTextCharacters: -1 } })).toThrow(InvalidArgumentError)
  })

  it('rejects non-JSON values, cycles and deep nesting inside an otherwise valid card', () => {
    const withFunction = cardV2() as Record<string, unknown>
    withFunction.callback = () => 1
    expect(() => importCharacterCard(withFunction)).toThrow(/at callback: must be plain JSON data/)
    const withDate = cardV2() as Record<string, unknown>
    withDate.when = new Date(0)
    expect(() => importCharacterCard(withDate)).toThrow(/at when: must be plain JSON data/)
    const withNaN = cardV2() as Record<string, unknown>
    withNaN.score = Number.NaN
    expect(() => importCharacterCard(withNaN)).toThrow(/at score: must be a finite number/)
    const cyclic = cardV2() as Record<string, unknown>
    cyclic.self = cyclic
    expect(() => importCharacterCard(cyclic)).toThrow(/at self: repeats an object/)
    let deep: unknown = 1
    for (let level = 0; level < 100_000; level++) deep = [deep]
    const nested = cardV2() as Record<string, unknown>
    nested.deep = deep
    expect(() => importCharacterCard(nested)).toThrow(/nested more than 64 deep \(limits\.maxDepth\)/)
    expect(() => importCharacterCard(nested, { limits: { maxDepth: 10_000 } })).toThrow(/nested more than 10000 deep/)
    const character = importCharacterCard(cardV2())
    expect(() => exportCharacterCard({ ...character, card: { ...character.card!, topLevel: { deep } } }, { version: 'v2' })).toThrow(InvalidArgumentError)
  })

  it('throws InvalidArgumentError for an invalid character or version on export', () => {
    expect(() => exportCharacterCard({ id: 'x', name: '' }, { version: 'v2' })).toThrow(/character\.name/)
    expect(() => exportCharacterCard({ id: 'x', name: 'X' }, { version: 'v4' as 'v2' })).toThrow(InvalidArgumentError)
  })
})
