import { describe, expect, it } from 'vitest'
import { nativeEncode, nativeTokenizer } from '../../test/native-reference.js'
import { byteLevelBpeJson } from '../../test/small-tokenizers.js'
import { Tokenizer } from '../tokenizer.js'
import { createPostProcessor } from './create-post-processor.js'

const special = (id: number, content: string) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })
const addedTokens = [special(256, '<s>'), special(257, '</s>'), special(258, '[CLS]'), special(259, '[SEP]')]

const postProcessors: Record<string, unknown> = {
  'TemplateProcessing (<s> $A)': {
    type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
    pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
    special_tokens: { '<s>': { id: '<s>', ids: [256], tokens: ['<s>'] } },
  },
  'TemplateProcessing ([CLS] $A [SEP] </s>, several ids)': {
    type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: 'begin', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
    pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
    special_tokens: { begin: { id: 'begin', ids: [258, 259], tokens: ['[CLS]', '[SEP]'] }, '</s>': { id: '</s>', ids: [257], tokens: ['</s>'] } },
  },
  BertProcessing: { type: 'BertProcessing', sep: ['[SEP]', 259], cls: ['[CLS]', 258] },
  RobertaProcessing: { type: 'RobertaProcessing', sep: ['</s>', 257], cls: ['<s>', 256], trim_offsets: true, add_prefix_space: false },
  ByteLevel: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
  Sequence: {
    type: 'Sequence',
    processors: [
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
        pair: [],
        special_tokens: { '<s>': { id: '<s>', ids: [256], tokens: ['<s>'] } },
      },
    ],
  },
}

describe('createPostProcessor', () => {
  describe.each(Object.entries(postProcessors))('%s', (_, postProcessor) => {
    const json = byteLevelBpeJson({ fields: { post_processor: postProcessor, added_tokens: addedTokens } })
    const ours = Tokenizer.fromJSON(json)
    const reference = nativeTokenizer(json)
    it.each([
      ['hello', true],
      ['hello', false],
      ['', true],
      ['<s>x</s>', true],
    ] as const)('encodes %j (special tokens: %s) as the Rust tokenizer', async (text, addSpecialTokens) => {
      expect(Array.from(ours.encode(text, { addSpecialTokens }))).toEqual(await nativeEncode(reference, text, addSpecialTokens))
    })
  })

  it('names a template token missing from special_tokens', () => {
    const json = { type: 'TemplateProcessing', single: [{ SpecialToken: { id: '<s>', type_id: 0 } }], special_tokens: {} }
    expect(() => createPostProcessor(json, { source: 'tokenizer.json', path: ['post_processor'] })).toThrow(
      /post_processor\.single\[0\]\.SpecialToken\.id: the special token "<s>" is not in special_tokens/,
    )
  })

  it('names an unsupported type and the supported ones', () => {
    expect(() => createPostProcessor({ type: 'Magic' }, { source: 'tokenizer.json', path: ['post_processor'] })).toThrow(
      /unsupported post-processor type 'Magic'; supported: TemplateProcessing, ByteLevel, BertProcessing, RobertaProcessing, Sequence/,
    )
  })
})
