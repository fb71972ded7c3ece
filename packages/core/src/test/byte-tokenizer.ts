import type { ChatMessage } from '../data.js'
import { InvalidArgumentError } from '../errors.js'
import type { ChatTemplateOptions, DecodeOptions, EncodeOptions, TokenizerV1 } from '../interfaces.js'

const bos = 256
const eos = 257
const pad = 258
const specialTokens: Record<number, string> = { [bos]: '<bos>', [eos]: '<eos>', [pad]: '<pad>' }

/**
 * A tokenizer for tests: one token per UTF-8 byte (ids 0–255), plus `<bos>` 256, `<eos>` 257 and
 * `<pad>` 258. Its chat template renders `role: content\n` lines, then `assistant: ` when asked for
 * the generation prompt.
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
      const addSpecialTokens = options.addSpecialTokens ?? true
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
    applyChatTemplate(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): string {
      const lines = messages.map((message) => `${message.role}: ${message.content}\n`).join('')
      return options.addGenerationPrompt ? `${lines}assistant: ` : lines
    },
  }
}
