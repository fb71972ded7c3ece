/**
 * Inputs for the fuzz tests: the real tokenizers cut down to a few hundred tokens (every component kept),
 * synthetic ones for the component types the real ones lack, and seeded mutations of JSON values, JSON
 * text and chat templates.
 */
import { readFileSync } from 'node:fs'
import type { Random } from '@ludic/core'
import { byteLevelAlphabet } from '../src/byte-level/byte-level-alphabet.js'
import { referenceFiles, referenceTokenizerNames } from './reference-tokenizers.js'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type JsonContainer = Json[] | { [key: string]: Json }

export interface FuzzTokenizer {
  name: string
  tokenizer: Json
  config: Json
}

/** A BPE model with its vocabulary cut to ids below `keep` (byte-level characters always kept), and the merges left whole. */
function cutBpe(model: Record<string, Json>, keep: number): Record<string, Json> {
  const vocab = model.vocab as Record<string, number>
  const alphabet = new Set(byteLevelAlphabet())
  const kept: Record<string, number> = {}
  for (const [token, id] of Object.entries(vocab)) if (id < keep || alphabet.has(token) || /^<0x[0-9A-F]{2}>$/.test(token)) kept[token] = id
  const merges = (model.merges as Json[]).filter((merge) => {
    const [left, right] = typeof merge === 'string' ? merge.split(' ') : (merge as string[])
    return left !== undefined && right !== undefined && left + right in kept && left in kept && right in kept
  })
  return { ...model, vocab: kept, merges }
}

const wordPieceVocabulary = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', 'hello', 'world', 'un', '##aff', '##able', 'a', '##b', '!', 'é', '漢']

/** Tokenizers for the component types the real ones lack: BERT's WordPiece pipeline, WordLevel with CTC, fixed-length Unicode scripts. */
const syntheticTokenizers: FuzzTokenizer[] = [
  {
    name: 'bert',
    tokenizer: {
      added_tokens: [{ id: 0, content: '[PAD]', special: true, normalized: false }],
      normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
      pre_tokenizer: { type: 'BertPreTokenizer' },
      model: {
        type: 'WordPiece',
        unk_token: '[UNK]',
        continuing_subword_prefix: '##',
        max_input_chars_per_word: 100,
        vocab: Object.fromEntries(wordPieceVocabulary.map((token, id) => [token, id])),
      },
      post_processor: { type: 'BertProcessing', sep: ['[SEP]', 3], cls: ['[CLS]', 2] },
      decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    },
    config: { chat_template: '{% for message in messages %}[{{ message.role }}] {{ message.content }}\n{% endfor %}', unk_token: '[UNK]' },
  },
  {
    name: 'word-level',
    tokenizer: {
      normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Strip', strip_left: true, strip_right: true }, { type: 'Nmt' }] },
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [{ type: 'Punctuation', behavior: 'Isolated' }, { type: 'Digits', individual_digits: true }, { type: 'WhitespaceSplit' }],
      },
      model: { type: 'WordLevel', unk_token: '<unk>', vocab: { '<unk>': 0, '<pad>': 1, '|': 2, hello: 3, world: 4, '!': 5, '1': 6 } },
      post_processor: { type: 'RobertaProcessing', sep: ['</s>', 5], cls: ['<s>', 4], trim_offsets: true, add_prefix_space: false },
      decoder: { type: 'CTC', pad_token: '<pad>', word_delimiter_token: '|', cleanup: true },
    },
    config: {},
  },
  {
    name: 'scripts',
    tokenizer: {
      normalizer: { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'StripAccents' }, { type: 'Lowercase' }, { type: 'Prepend', prepend: '_' }] },
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [{ type: 'UnicodeScripts' }, { type: 'FixedLength', length: 3 }, { type: 'CharDelimiterSplit', delimiter: 'x' }],
      },
      model: {
        type: 'BPE',
        unk_token: '<unk>',
        fuse_unk: true,
        end_of_word_suffix: '</w>',
        vocab: { '<unk>': 0, a: 1, b: 2, 'b</w>': 3, 'ab</w>': 4 },
        merges: [['a', 'b</w>']],
      },
      decoder: { type: 'Sequence', decoders: [{ type: 'BPEDecoder', suffix: '</w>' }, { type: 'Strip', content: '_', start: 1, stop: 0 }, { type: 'Fuse' }] },
    },
    config: {
      chat_template: [
        { name: 'default', template: '{{ messages | tojson }}' },
        { name: 'tool_use', template: '{{ tools | tojson(indent=2) }}' },
      ],
    },
  },
]

let cached: FuzzTokenizer[] | undefined

/** The real tokenizers (BPE vocabularies cut to ids below 400) and the synthetic ones, as JSON text (parse a fresh copy per case). */
export function fuzzTokenizers(): FuzzTokenizer[] {
  if (cached !== undefined) return cached
  const real = referenceTokenizerNames.map((name) => {
    const { tokenizer, config } = referenceFiles(name)
    const json = tokenizer as Record<string, Json>
    return { name, tokenizer: { ...json, model: cutBpe(json.model as Record<string, Json>, 400) }, config: config as Json }
  })
  const unigram = JSON.parse(readFileSync(new URL('./fixtures/unigram-custom-rules.tokenizer.json', import.meta.url), 'utf8')) as Json
  cached = [...real, { name: 'unigram', tokenizer: unigram, config: {} }, ...syntheticTokenizers]
  return cached
}

/** Values of other types and sizes than expected: ids past every limit, negatives, fractions, Infinity, empty and long strings. */
const interestingValues: Json[] = [
  -1,
  0,
  1.5,
  2 ** 24,
  2 ** 24 - 1,
  2 ** 31,
  2 ** 32,
  2 ** 53,
  1e9,
  1e300,
  -1e300,
  '',
  'x',
  'Sequence',
  'BPE',
  null,
  true,
  [],
  {},
  [1, 2],
  [[]],
  { type: 'Sequence' },
]
const hugeNumbers = [1e9, 2 ** 24, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53, 1e300, Number.MAX_SAFE_INTEGER, -1, -1e9, 0.5]
const typeNames = [
  'Sequence',
  'BPE',
  'WordPiece',
  'WordLevel',
  'Unigram',
  'ByteLevel',
  'Split',
  'Replace',
  'Precompiled',
  'TemplateProcessing',
  'Magic',
  'Strip',
]

/** Patterns that backtrack catastrophically or do not translate, and fragments to splice into real ones. */
const hostilePatterns = [
  '(a+)+$',
  '(a|a)*b',
  '(\\s*)*x',
  '(?:\\p{L}+\\s?)*$',
  '\\p{L}{1,3}+$',
  '(?>a+)+$',
  '',
  '(',
  '\\',
  '[',
  '(?<x>a)\\k<x>',
  '\\p{Nope}',
  'a{99999999}',
]
const patternFragments = ['+', '*', '?', '(', ')', '|', '{1,3}', '(?:', '\\s*', '\\p{L}+', '[', ']', '\\', '(?i:', '{2}+', '++']

const characterPool = [
  'a',
  'b',
  ' ',
  '\n',
  '\t',
  'é',
  'ß',
  '漢',
  '😀',
  '\u0301',
  '\ufffd',
  '\u0000',
  '\ud800',
  '<',
  '|',
  '>',
  "'",
  '1',
  '\u3000',
  '\u00a0',
  'ﷺ',
  'İ',
]

/** A random string of up to `maxLength` characters from a pool of awkward ones (combining marks, lone surrogates…). */
export function randomText(random: Random, maxLength: number): string {
  let text = ''
  const length = random.nextInt(maxLength + 1)
  for (let index = 0; index < length; index++) text += random.choice(characterPool)
  return text
}

function isContainer(value: Json | undefined): value is JsonContainer {
  return typeof value === 'object' && value !== null
}

function childKeys(container: JsonContainer): (string | number)[] {
  return Array.isArray(container) ? container.map((_, index) => index) : Object.keys(container)
}

function childOf(container: JsonContainer, key: string | number): Json | undefined {
  return Array.isArray(container) ? container[key as number] : container[key as string]
}

function setChild(container: JsonContainer, key: string | number, value: Json): void {
  if (Array.isArray(container)) container[key as number] = value
  else container[key as string] = value
}

/** A random node: a walk from the root that stops at each level with probability 1/4 (so shallow nodes, the components, come often). */
function randomPlace(random: Random, root: JsonContainer): { parent: JsonContainer; key: string | number } | undefined {
  let parent = root
  for (let depth = 0; depth < 40; depth++) {
    const keys = childKeys(parent)
    if (keys.length === 0) return undefined
    const key = random.choice(keys)
    const child = childOf(parent, key)
    if (!isContainer(child) || random.nextInt(4) === 0) return { parent, key }
    parent = child
  }
  return undefined
}

/** A random place holding a value that `accept` likes (a few tries). */
function findPlace(random: Random, root: JsonContainer, accept: (value: Json | undefined, key: string | number) => boolean) {
  for (let attempt = 0; attempt < 30; attempt++) {
    const place = randomPlace(random, root)
    if (place !== undefined && accept(childOf(place.parent, place.key), place.key)) return place
  }
  return undefined
}

/** `value` wrapped `depth` times in arrays, or in Sequences under `itemsKey`. */
function nested(value: Json, depth: number, itemsKey: string | undefined): Json {
  let result = value
  for (let level = 0; level < depth; level++) result = itemsKey === undefined ? [result] : { type: 'Sequence', [itemsKey]: [result] }
  return result
}

/** Mutates a parsed `tokenizer.json` in place, one of a dozen ways; returns what it did. */
export function mutateJson(random: Random, root: JsonContainer, donors: readonly FuzzTokenizer[]): string {
  const place = randomPlace(random, root)
  if (place === undefined) return 'nothing'
  const { parent, key } = place
  const value = childOf(parent, key)
  switch (random.nextInt(12)) {
    case 0:
      setChild(parent, key, random.choice(interestingValues))
      return `${key} := interesting value`
    case 1: {
      const number = findPlace(random, root, (candidate) => typeof candidate === 'number')
      if (number === undefined) return 'no number'
      setChild(number.parent, number.key, random.choice(hugeNumbers))
      return `number ${number.key} := huge or negative`
    }
    case 2:
      if (Array.isArray(parent)) parent.splice(key as number, 1)
      else delete parent[key as string]
      return `deleted ${key}`
    case 3:
      if (Array.isArray(value)) setChild(parent, key, Object.fromEntries(value.map((item, index) => [String(index), item])))
      else if (isContainer(value)) setChild(parent, key, Object.values(value))
      else setChild(parent, key, [value ?? null])
      return `${key}: wrong shape`
    case 4: {
      const depth = random.choice([50, 3000, 20_000])
      setChild(parent, key, nested(value ?? null, depth, random.choice([undefined, 'normalizers', 'pretokenizers', 'decoders', 'processors'])))
      return `${key} nested ${depth} deep`
    }
    case 5: {
      // A Sequence whose items are repeated: long Sequences, and growth when the items grow the text.
      const stage = random.choice(['normalizer', 'pre_tokenizer', 'decoder', 'post_processor'])
      const itemsKey = { normalizer: 'normalizers', pre_tokenizer: 'pretokenizers', decoder: 'decoders', post_processor: 'processors' }[stage]!
      const component =
        (root as Record<string, Json>)[stage] ?? random.choice([{ type: 'Replace', pattern: { String: 'a' }, content: 'aa' }, { type: 'ByteLevel' }])
      ;(root as Record<string, Json>)[stage] = { type: 'Sequence', [itemsKey]: Array.from({ length: random.choice([2, 40, 300]) }, () => component) }
      return `${stage} repeated`
    }
    case 6: {
      const donor = random.choice(donors).tokenizer as Record<string, Json>
      const stage = random.choice(['normalizer', 'pre_tokenizer', 'decoder', 'post_processor', 'model'])
      ;(root as Record<string, Json>)[random.choice(['normalizer', 'pre_tokenizer', 'decoder', 'post_processor', 'model'])] = structuredClone(
        donor[stage] ?? null,
      )
      return `${stage} from another tokenizer`
    }
    case 7: {
      const pattern = findPlace(random, root, (_, candidateKey) => candidateKey === 'Regex')
      const source =
        random.nextInt(2) === 0
          ? random.choice(hostilePatterns)
          : spliceFragment(random, String(pattern === undefined ? 'a+' : childOf(pattern.parent, pattern.key)))
      const target = pattern ?? { parent: root, key: 'pre_tokenizer' }
      if (pattern === undefined) setChild(root, 'pre_tokenizer', { type: 'Split', pattern: { Regex: source }, behavior: 'Isolated', invert: false })
      else setChild(target.parent, target.key, source)
      return `Regex := ${JSON.stringify(source)}`
    }
    case 8: {
      const text = findPlace(random, root, (candidate) => typeof candidate === 'string')
      if (text === undefined) return 'no string'
      setChild(text.parent, text.key, random.choice([...typeNames, '', 'x'.repeat(100_000), randomText(random, 10)]))
      return `string ${text.key} changed`
    }
    case 9: {
      // A real charsmap with bytes changed (the trie's units point anywhere) or cut, else random bytes.
      const real = findPlace(random, root, (_, candidateKey) => candidateKey === 'precompiled_charsmap')
      const original = real === undefined ? undefined : childOf(real.parent, real.key)
      if (real === undefined || typeof original !== 'string') {
        const charsmap = Array.from({ length: random.nextInt(64) }, () => random.nextInt(256))
        ;(root as Record<string, Json>).normalizer = { type: 'Precompiled', precompiled_charsmap: Buffer.from(charsmap).toString('base64') }
        return 'random precompiled_charsmap'
      }
      const bytes = Buffer.from(original, 'base64')
      for (let change = 0; change < 1 + random.nextInt(8) && bytes.length > 0; change++) bytes[random.nextInt(bytes.length)] = random.nextInt(256)
      setChild(real.parent, real.key, bytes.subarray(0, random.nextInt(2) === 0 ? bytes.length : random.nextInt(bytes.length + 1)).toString('base64'))
      return 'precompiled_charsmap corrupted'
    }
    case 10:
      if (isContainer(value)) setChild(value, random.choice(['type', 'id', 'ids', 'vocab', 'extra', 'merges']), random.choice(interestingValues))
      else setChild(parent, key, random.choice(interestingValues))
      return `${key}: field added or replaced`
    default: {
      const added = {
        id: random.choice([...hugeNumbers, 5, 300]),
        content: random.choice(['<x>', 'a', ' ', '', 'hello', '\ud800']),
        normalized: random.nextInt(2) === 0,
      }
      const tokens = (root as Record<string, Json>).added_tokens
      ;(root as Record<string, Json>).added_tokens = Array.isArray(tokens) ? [...tokens, added] : [added]
      return 'added token'
    }
  }
}

/** Inserts a regex fragment somewhere in a pattern. */
function spliceFragment(random: Random, pattern: string): string {
  const at = random.nextInt(pattern.length + 1)
  return pattern.slice(0, at) + random.choice(patternFragments) + pattern.slice(at)
}

/** Mutates JSON text: truncation, characters replaced by JSON-significant ones, a duplicated span, or random bytes. */
export function mutateText(random: Random, text: string): string {
  switch (random.nextInt(4)) {
    case 0:
      return text.slice(0, random.nextInt(text.length + 1))
    case 1: {
      const characters = Array.from(text)
      for (let flip = 0; flip < 1 + random.nextInt(4) && characters.length > 0; flip++)
        characters[random.nextInt(characters.length)] = random.choice([...'{}[]",:0123456789-.eE \\u'])
      return characters.join('')
    }
    case 2: {
      const start = random.nextInt(text.length + 1)
      const end = Math.min(text.length, start + random.nextInt(200))
      return text.slice(0, end) + text.slice(start)
    }
    default:
      return Buffer.from(Array.from({ length: random.nextInt(200) }, () => random.nextInt(256))).toString('latin1')
  }
}

/** Fragments of Jinja, hostile ones included, to splice into chat templates. */
const templateFragments = [
  '{{ ',
  ' }}',
  '{% ',
  ' %}',
  '{% for x in range(100000000) %}',
  '{% for x in messages %}',
  '{% endfor %}',
  '{% if messages %}',
  '{% endif %}',
  '{{ range(1000000000) | length }}',
  "{{ 'x' | indent(500000000, true) }}",
  '{{ messages | tojson(indent=100000000) }}',
  "{{ raise_exception('no') }}",
  '{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}',
  "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
  '{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}',
  "{{ messages[0]['content'] * 100000000 }}",
  '{{ 10 ** 100000 }}',
  '{{ 1 / 0 }}',
  '{{ none.x.y }}',
  "{{ strftime_now('%Y-%m-%d') }}",
  '{{ messages | map(attribute="content") | join(", ") }}',
  "{{ 'a,b'.split(',') }}",
  "{{ message.content.strip('\\n') | trim }}",
  '((((((((((',
  '[[[[[[[[[[',
  '{{ x',
  '{%- set ',
  '{{ messages|length }}',
  '{{ tools }}',
  '{{ add_generation_prompt }}',
]

/** Mutates a chat template: a fragment inserted, a span deleted or duplicated, truncation, or random characters. */
export function mutateTemplate(random: Random, template: string, others: readonly string[]): string {
  const at = random.nextInt(template.length + 1)
  switch (random.nextInt(6)) {
    case 0:
    case 1:
      return template.slice(0, at) + random.choice(templateFragments) + template.slice(at)
    case 2:
      return template.slice(0, at) + template.slice(Math.min(template.length, at + random.nextInt(40)))
    case 3: {
      const other = random.choice(others)
      return template.slice(0, at) + other.slice(random.nextInt(other.length + 1))
    }
    case 4:
      return template.slice(0, at)
    default:
      return randomText(random, 60) + random.choice(templateFragments) + randomText(random, 20)
  }
}
