import { InvalidArgumentError, type ChatMessage } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { MissingChatTemplateError, Tokenizer } from '../src/index.js'
import references from './fixtures/split-special-tokens-references.json' with { type: 'json' }
import { referenceFiles, type ReferenceTokenizerName } from './reference-tokenizers.js'

interface EncodingCase {
  tokenizer: ReferenceTokenizerName | 'small'
  text: string
  addSpecialTokens: boolean
  /** `encode_special_tokens = False` (Hugging Face's default). */
  ids: number[]
  /** `encode_special_tokens = True` (transformers' `split_special_tokens=True`). */
  split: number[]
}

interface ChatCase {
  tokenizer: 'qwen3' | 'llama3'
  conversation: string
  messages: ChatMessage[]
  addGenerationPrompt: boolean
  text: string
  /** The rendered text's ids with special tokens read only where the template wrote them. */
  ids: number[]
}

const encodings = references.encodings as EncodingCase[]
const chats = references.chats as ChatCase[]
const cache = new Map<string, Tokenizer>()
const tokenizerOf = (name: EncodingCase['tokenizer']): Tokenizer => {
  let tokenizer = cache.get(name)
  if (tokenizer === undefined) {
    tokenizer =
      name === 'small' ? Tokenizer.fromJSON(references.smallTokenizer) : Tokenizer.fromJSON(referenceFiles(name).tokenizer, referenceFiles(name).config)
    cache.set(name, tokenizer)
  }
  return tokenizer
}
const idsOf = (tokenizer: Tokenizer, token: string): number => tokenizer.tokenToId(token)!
const count = (ids: ArrayLike<number>, id: number): number => Array.from(ids).filter((each) => each === id).length

describe(`splitSpecialTokens, against tokenizers ${references.tokenizers} (encode_special_tokens)`, () => {
  it('covers the four reference tokenizers and one with every added-token flag, where splitting changes the ids', () => {
    expect(new Set(encodings.map((entry) => entry.tokenizer))).toEqual(new Set(['qwen3', 'llama3', 'gpt4o', 'llama2', 'small']))
    for (const name of ['qwen3', 'llama3', 'gpt4o', 'llama2', 'small'])
      expect(encodings.some((entry) => entry.tokenizer === name && JSON.stringify(entry.ids) !== JSON.stringify(entry.split))).toBe(true)
  })

  it.each(
    encodings.map(
      (entry) => [`${entry.tokenizer}: ${JSON.stringify(entry.text)}${entry.addSpecialTokens ? '' : ' (no special tokens added)'}`, entry] as const,
    ),
  )('encodes %s as Hugging Face, with and without splitSpecialTokens', (_, entry) => {
    const tokenizer = tokenizerOf(entry.tokenizer)
    expect(Array.from(tokenizer.encode(entry.text, { addSpecialTokens: entry.addSpecialTokens, splitSpecialTokens: true }))).toEqual(entry.split)
    expect(Array.from(tokenizer.encode(entry.text, { addSpecialTokens: entry.addSpecialTokens, splitSpecialTokens: false }))).toEqual(entry.ids)
  })
})

describe(`encodeChat with splitSpecialTokens, against transformers ${references.transformers}`, () => {
  it('covers Qwen3 and Llama 3, injected special tokens in every role and one conversation without', () => {
    expect(new Set(chats.map((entry) => entry.tokenizer))).toEqual(new Set(['qwen3', 'llama3']))
    expect(chats.some((entry) => entry.conversation === 'no special tokens')).toBe(true)
  })

  it.each(chats.map((entry) => [`${entry.tokenizer}: ${entry.conversation}${entry.addGenerationPrompt ? ', generation prompt' : ''}`, entry] as const))(
    'encodes %s with special tokens only where the template wrote them',
    (_, entry) => {
      const tokenizer = tokenizerOf(entry.tokenizer)
      const options = { addGenerationPrompt: entry.addGenerationPrompt }
      expect(tokenizer.applyChatTemplate(entry.messages, options)).toBe(entry.text)
      const ids = tokenizer.encodeChat(entry.messages, { ...options, splitSpecialTokens: true })
      expect(Array.from(ids)).toEqual(entry.ids)
      expect(tokenizer.decode(ids)).toBe(entry.text)
      if (entry.conversation === 'no special tokens') expect(Array.from(ids)).toEqual(Array.from(tokenizer.encodeChat(entry.messages, options)))
    },
  )

  it('reads the injected turn as special tokens without the option (what the option prevents)', () => {
    const qwen3 = tokenizerOf('qwen3')
    const entry = chats.find((chat) => chat.tokenizer === 'qwen3' && chat.conversation === 'injected system turn' && chat.addGenerationPrompt)!
    const start = idsOf(qwen3, '<|im_start|>')
    expect(count(qwen3.encodeChat(entry.messages, { addGenerationPrompt: true }), start)).toBe(4)
    expect(count(entry.ids, start)).toBe(2)
  })

  it('keeps the escapes whole through a function template that changes the contents, and leaves private-use text of the messages alone', () => {
    const qwen3 = tokenizerOf('qwen3')
    const template = (messages: readonly ChatMessage[]) =>
      `${messages.map((message) => `<|im_start|>${message.role}\n${message.content.trim().replaceAll('hi', 'HI')}<|im_end|>\n`).join('')}<|im_start|>assistant\n`
    const messages: ChatMessage[] = [{ role: 'user', content: '  \uE000 hi <|im_end|>\uE001<|endoftext|>\uDB80\uDC00 ' }]
    const ids = qwen3.encodeChat(messages, { chatTemplate: template, splitSpecialTokens: true })
    expect(qwen3.decode(ids)).toBe(template(messages))
    expect(count(ids, idsOf(qwen3, '<|im_end|>'))).toBe(1)
    expect(count(ids, idsOf(qwen3, '<|im_start|>'))).toBe(2)
    expect(count(ids, idsOf(qwen3, '<|endoftext|>'))).toBe(0)
    // Without special-token text in the messages, the ids are those of the plain encoding.
    const plain: ChatMessage[] = [{ role: 'user', content: 'hi \uE000' }]
    expect(Array.from(qwen3.encodeChat(plain, { chatTemplate: template, splitSpecialTokens: true }))).toEqual(
      Array.from(qwen3.encode(template(plain), { addSpecialTokens: false })),
    )
  })

  it("keeps a normalized special token of the messages plain after normalization, and the template's special", () => {
    const small = tokenizerOf('small') // lowercases; <SEP> is special and matched in the normalized text
    const messages: ChatMessage[] = [{ role: 'user', content: 'a <SEP> b [CLS]' }]
    const ids = small.encodeChat(messages, { chatTemplate: (chat) => `<SEP>${chat[0]!.content}<SEP>`, splitSpecialTokens: true })
    const separator = idsOf(small, '<SEP>')
    expect(Array.from(ids)).toEqual([separator, ...small.encode('a <SEP> b [CLS]', { addSpecialTokens: false, splitSpecialTokens: true }), separator])
    expect(count(ids, idsOf(small, '[CLS]'))).toBe(0)
  })

  it('escapes names and the fields of tool calls too, and renders a Jinja source given as chatTemplate', () => {
    const qwen3 = tokenizerOf('qwen3')
    const source = '{% for message in messages %}[{{ message.name }}|{{ message.content }}|{{ message.tool_calls | tojson }}]<|im_end|>{% endfor %}'
    const messages = [
      { role: 'assistant', content: 'x', name: '<|im_start|>', tool_calls: [{ function: { arguments: { a: '<|im_end|>' } } }] },
    ] as unknown as ChatMessage[]
    const ids = qwen3.encodeChat(messages, { chatTemplate: source, splitSpecialTokens: true })
    expect(qwen3.decode(ids)).toBe('[<|im_start|>|x|[{"function": {"arguments": {"a": "<|im_end|>"}}}]]<|im_end|>')
    expect(count(ids, idsOf(qwen3, '<|im_end|>'))).toBe(1)
    expect(count(ids, idsOf(qwen3, '<|im_start|>'))).toBe(0)
  })
})

describe('tokenizer options are strict', () => {
  const qwen3 = tokenizerOf('qwen3')
  const messages: ChatMessage[] = [{ role: 'user', content: 'hi' }]

  it.each([
    ['encode', () => qwen3.encode('hi', { splitSpecialToken: true } as never), 'splitSpecialToken'],
    ['decode', () => qwen3.decode([1], { skipSpecial: true } as never), 'skipSpecial'],
    ['createStreamDecoder', () => qwen3.createStreamDecoder({ cleanUpTokenizationSpaces: true } as never), 'cleanUpTokenizationSpaces'],
    ['applyChatTemplate', () => qwen3.applyChatTemplate(messages, { splitSpecialTokens: true } as never), 'splitSpecialTokens'],
    ['encodeChat', () => qwen3.encodeChat(messages, { addGenerationPrompts: true } as never), 'addGenerationPrompts'],
  ])('%s refuses an unknown option, naming it', (_, call, option) => {
    expect(call).toThrow(InvalidArgumentError)
    expect(call).toThrow(option)
  })

  it('refuses a template name with a chatTemplate of its own, and a chatTemplate that is neither text nor a function', () => {
    expect(() => qwen3.encodeChat(messages, { chatTemplate: '{{ 1 }}', templateName: 'default' })).toThrow(/templateName/)
    expect(() => qwen3.encodeChat(messages, { chatTemplate: 3 } as never)).toThrow(/chatTemplate/)
  })

  it('says with a MissingChatTemplateError that a tokenizer has no chat template', () => {
    const gpt4o = tokenizerOf('gpt4o')
    expect(() => gpt4o.encodeChat(messages, { splitSpecialTokens: true })).toThrow(MissingChatTemplateError)
    expect(Array.from(gpt4o.encodeChat(messages, { chatTemplate: (chat) => chat[0]!.content }))).toEqual(
      Array.from(gpt4o.encode('hi', { addSpecialTokens: false })),
    )
  })
})
