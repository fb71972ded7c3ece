import { z } from 'zod'
import type { ChatMessage } from '../data.js'
import { InvalidArgumentError } from '../errors.js'
import type { ChatEncodeOptions, ChatTemplateOptions, DecodeOptions, EncodeOptions, TokenizerV1 } from '../interfaces.js'
import { parseArgument } from '../validation.js'

const bos = 256
const eos = 257
const pad = 258
const specialTokens: Record<number, string> = { [bos]: '<bos>', [eos]: '<eos>', [pad]: '<pad>' }

const encodeOptionsSchema = z.strictObject({ addSpecialTokens: z.boolean().optional(), splitSpecialTokens: z.boolean().optional() })
const chatOptionsSchema = z.strictObject({
  addGenerationPrompt: z.boolean().optional(),
  tools: z.array(z.record(z.string(), z.unknown())).optional(),
  splitSpecialTokens: z.boolean().optional(),
  chatTemplate: z
    .custom<(messages: readonly ChatMessage[], options: { addGenerationPrompt: boolean }) => string>(
      (value) => typeof value === 'function',
      'must be a function: the byte tokenizer renders no Jinja templates',
    )
    .optional(),
})

/**
 * A tokenizer for tests: one token per UTF-8 byte (ids 0–255), plus `<bos>` 256, `<eos>` 257 and
 * `<pad>` 258. Its chat template renders `role: content\n` lines, then `assistant: ` when asked for
 * the generation prompt. Text never encodes to a special token (`<eos>` in a text is its five bytes), so
 * `splitSpecialTokens` changes nothing.
 */
export function createByteTokenizer(): TokenizerV1 {
  const encoder = new TextEncoder()
  const decoder = new TextDecoder()
  return {
    specificationVersion: 'v1',
    vocabSize: 259,
    bosTokenId: bos,
    eosTokenId: eos,
    padTokenId: pad,
    encode(text: string, options: EncodeOptions = {}): Int32Array {
      const bytes = encoder.encode(text)
      const addSpecialTokens = parseArgument(encodeOptionsSchema, options, 'options').addSpecialTokens ?? true
      const ids = new Int32Array(bytes.length + (addSpecialTokens ? 1 : 0))
      let offset = 0
      if (addSpecialTokens) ids[offset++] = bos
      ids.set(bytes, offset)
      return ids
    },
    decode(ids: ArrayLike<number>, options: DecodeOptions = {}): string {
      let text = ''
      const bytes: number[] = []
      const flush = () => {
        text += decoder.decode(Uint8Array.from(bytes))
        bytes.length = 0
      }
      for (let index = 0; index < ids.length; index++) {
        const id = ids[index]!
        if (!Number.isInteger(id) || id < 0 || id > pad) {
          throw new InvalidArgumentError({ argument: `ids[${index}]`, value: id, message: 'is not a token id of the byte tokenizer (0–258)' })
        }
        if (id < 256) bytes.push(id)
        else {
          flush()
          if (!(options.skipSpecialTokens ?? false)) text += specialTokens[id]
        }
      }
      flush()
      return text
    },
    tokenToId(token: string): number | undefined {
      for (const [id, text] of Object.entries(specialTokens)) if (text === token) return Number(id)
      const bytes = encoder.encode(token)
      return bytes.length === 1 ? bytes[0] : undefined
    },
    idToToken(id: number): string | undefined {
      if (specialTokens[id] !== undefined) return specialTokens[id]
      return Number.isInteger(id) && id >= 0 && id < 256 ? String.fromCharCode(id) : undefined
    },
    applyChatTemplate,
    encodeChat(messages: readonly ChatMessage[], options: ChatEncodeOptions = {}): Int32Array {
      const { chatTemplate, addGenerationPrompt = false } = parseArgument(chatOptionsSchema, options, 'options')
      const text = chatTemplate === undefined ? applyChatTemplate(messages, { addGenerationPrompt }) : chatTemplate(messages, { addGenerationPrompt })
      return Int32Array.from(encoder.encode(text))
    },
  }
}

function applyChatTemplate(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): string {
  const lines = messages.map((message) => `${message.role}: ${message.content}\n`).join('')
  return options.addGenerationPrompt ? `${lines}assistant: ` : lines
}
