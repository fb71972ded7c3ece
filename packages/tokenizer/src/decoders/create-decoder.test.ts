import { describe, expect, it } from 'vitest'
import { nativeDecode } from '../../test/native-reference.js'
import { createDecoder } from './create-decoder.js'
import { decodeTokens } from './decoder.js'

const location = { source: 'tokenizer.json', path: ['decoder'] }

const cases: [string, unknown, string[][]][] = [
  [
    'ByteLevel',
    { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    [['Hello', 'Ġworld', 'ĊĊ', 'ä½', 'ł', 'å¥½'], ['ä½'], ['ð', 'Ł', 'ĺ'], ['<|im_end|>', 'Ġhi', '日本'], []],
  ],
  ['Metaspace', { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true }, [['▁Hello', '▁world'], ['▁▁x', '▁'], ['a▁b'], []]],
  ['Metaspace (never)', { type: 'Metaspace', replacement: '▁', prepend_scheme: 'never', split: true }, [['▁Hello', '▁world']]],
  ['ByteFallback', { type: 'ByteFallback' }, [['<0xE4>', '<0xBD>', '<0xA0>', 'x'], ['<0xE4>', '<0xBD>', 'y'], ['<0x41>'], ['<0xZZ>', '<0x4>']]],
  ['Fuse', { type: 'Fuse' }, [['a', 'b', 'c']]],
  ['Strip', { type: 'Strip', content: ' ', start: 1, stop: 1 }, [['  a  ', ' b', 'c ', 'xx']]],
  ['Replace', { type: 'Replace', pattern: { String: '▁' }, content: ' ' }, [['▁a▁b', 'c▁']]],
  ['Replace (regex)', { type: 'Replace', pattern: { Regex: '\\s+' }, content: '_' }, [['a  b', 'c\td']]],
  ['WordPiece', { type: 'WordPiece', prefix: '##', cleanup: true }, [['un', '##believ', '##able', '!', 'do', 'not', "'", 's']]],
  ['BPEDecoder', { type: 'BPEDecoder', suffix: '</w>' }, [['hel', 'lo</w>', 'wor', 'ld</w>']]],
  ['CTC', { type: 'CTC', pad_token: '<pad>', word_delimiter_token: '|', cleanup: true }, [['h', 'h', 'e', '<pad>', 'l', 'l', '<pad>', 'l', 'o', '|', 'w']]],
  [
    'Llama 2 (Sequence)',
    {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        { type: 'Strip', content: ' ', start: 1, stop: 0 },
      ],
    },
    [['▁Hello', '▁', '<0xE4>', '<0xBD>', '<0xA0>', '▁world'], ['<0xFF>'], ['▁▁']],
  ],
]

describe('createDecoder', () => {
  describe.each(cases)('%s', (_, json, tokenLists) => {
    const decoder = createDecoder(json, location)
    it.each(tokenLists)('decodes %j as the Rust tokenizer', (...tokens) => {
      expect(decodeTokens(decoder, tokens)).toBe(nativeDecode(json, tokens))
    })
  })

  it('strips a token shorter than start + stop to nothing (where the Rust decoder panics)', () => {
    expect(decodeTokens(createDecoder({ type: 'Strip', content: ' ', start: 1, stop: 1 }, location), ['', ' ', 'a'])).toBe('a')
  })

  it('names an unsupported type and the supported ones', () => {
    expect(() => createDecoder({ type: 'Magic' }, location)).toThrow(
      /decoder\.type: unsupported decoder type 'Magic'; supported: ByteLevel, Metaspace, ByteFallback/,
    )
  })
})
