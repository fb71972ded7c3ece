import { describe, expect, it } from 'vitest'
import { nativeEncode, nativeTokenizer } from '../test/native-reference.js'
import { byteLevelBpeJson } from '../test/small-tokenizers.js'
import { Tokenizer } from './tokenizer.js'

const addedToken = (id: number, content: string, flags: Partial<Record<'single_word' | 'lstrip' | 'rstrip' | 'normalized' | 'special', boolean>> = {}) => ({
  id,
  content,
  single_word: false,
  lstrip: false,
  rstrip: false,
  normalized: false,
  special: true,
  ...flags,
})

const json = byteLevelBpeJson({
  fields: {
    normalizer: { type: 'Lowercase' },
    added_tokens: [
      addedToken(256, '<mask>', { lstrip: true, rstrip: true, single_word: true, special: true }),
      addedToken(257, '[CLS]'),
      addedToken(258, 'Yesterday', { normalized: true, special: false }),
      addedToken(259, '<|a|>', { lstrip: true }),
      addedToken(260, '<|b|>', { rstrip: true }),
      addedToken(261, 'ony', { single_word: true, normalized: true, special: false }),
      addedToken(262, '<|a|><|b|>'),
      addedToken(263, '<think>', { special: false }),
      addedToken(264, '<|a'),
    ],
  },
})

/** Cases from Hugging Face's `added_vocabulary.rs` tests, and the options on their own. */
const texts = [
  '[CLS] My name is Anthony [SEP]',
  '<mask> My name <mask> A<mask> <mask>ony <mask>',
  '<mask>, <mask>- ◌̰<mask>',
  'Hi <mask> there\t<mask>\t<mask>\u2000',
  'I read a book YESTERDAY and yesterday',
  'left   <|a|>   right   <|b|>   end',
  '<|a|><|b|> longest match first, <|a|> <|b|>, <|a <|a|',
  'anthony ony ony, phony',
  '<think>x</think>',
  '   <|a|>',
  '<|b|>   ',
  '',
]

describe('AddedVocabulary', () => {
  const ours = Tokenizer.fromJSON(json)
  const reference = nativeTokenizer(json)

  it.each(texts)('cuts %j as the Rust tokenizer', async (text) => {
    expect(Array.from(ours.encode(text))).toEqual(await nativeEncode(reference, text))
  })

  it('decodes added tokens, and leaves out only the special ones with skipSpecialTokens', async () => {
    const ids = ours.encode('[CLS] hello <think> yesterday')
    expect(ours.decode(ids)).toBe(await reference.decode(Array.from(ids), false))
    expect(ours.decode(ids, { skipSpecialTokens: true })).toBe(await reference.decode(Array.from(ids), true))
    expect(ours.decode(ids, { skipSpecialTokens: true })).toBe(' hello <think> yesterday')
  })

  it('maps contents and ids both ways', () => {
    expect(ours.tokenToId('<mask>')).toBe(256)
    expect(ours.idToToken(262)).toBe('<|a|><|b|>')
    expect(ours.isSpecialTokenId(257)).toBe(true)
    expect(ours.isSpecialTokenId(258)).toBe(false)
    expect(ours.vocabSize).toBe(265)
  })
})
