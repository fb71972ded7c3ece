import type { ChatMessage, Completion, TokenizerV1 } from '@ludic/core'
import { z } from 'zod'

/**
 * The OpenAI wire format, as far as Ludic serves and reads it: request bodies (zod, for the server)
 * and the answer shapes, plus vLLM's token-id extensions (`return_token_ids` → `prompt_token_ids` and
 * per-choice `token_ids`).
 */

const notSupported = (what: string) => `${what} is not supported by this server`
const optional = <Schema extends z.ZodType>(schema: Schema) => schema.nullable().optional()

const textPartSchema = z.object({ type: z.literal('text'), text: z.string() })
const contentSchema = z.union([z.string(), z.array(textPartSchema)], { error: 'must be a string or a list of text parts ({ type: "text", text })' })

export const chatCompletionMessageSchema = z.object({
  /** `developer` is OpenAI's newer name for `system`. */
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  /** `null` only makes sense for an assistant message with tool calls; it is read as ''. */
  content: optional(contentSchema),
  name: z.string().optional(),
})

/** Sampling parameters shared by both endpoints. Unknown fields are ignored (as vLLM does). */
const samplingFields = {
  model: z.string({ error: 'is required' }).min(1),
  max_tokens: optional(z.number().int().min(1)),
  temperature: optional(z.number().min(0).max(2)),
  top_p: optional(z.number().gt(0).max(1)),
  /** vLLM extension; -1 or 0 disables. */
  top_k: optional(z.number().int().min(-1)),
  /** vLLM extension. */
  min_p: optional(z.number().min(0).max(1)),
  stop: optional(z.union([z.string().min(1), z.array(z.string().min(1)).max(16)], { error: 'must be a non-empty string or a list of them' })),
  seed: optional(z.number().int()),
  /** Completions per prompt. */
  n: optional(z.number().int().min(1).max(128)),
  /** Answer with server-sent events, OpenAI's chunks, then `data: [DONE]`. */
  stream: optional(z.boolean()),
  /** `include_usage: true` adds a last chunk with `usage` (and no choices). */
  stream_options: optional(z.object({ include_usage: optional(z.boolean()) })),
  frequency_penalty: optional(z.number().refine((value) => value === 0, notSupported('a non-zero frequency_penalty'))),
  presence_penalty: optional(z.number().refine((value) => value === 0, notSupported('a non-zero presence_penalty'))),
  logit_bias: optional(z.record(z.string(), z.number()).refine((bias) => Object.keys(bias).length === 0, notSupported('logit_bias'))),
  /** vLLM extension: answer with `prompt_token_ids` and per-choice `token_ids`. */
  return_token_ids: optional(z.boolean()),
  /**
   * vLLM extension: the stop tokens (end of sequence, the policy's stop ids) cannot be generated before this many
   * tokens; `stop` strings still end a choice. At most `max_tokens` (the server checks it against its default too).
   */
  min_tokens: optional(z.number().int().min(0)),
  /** vLLM extension: the end-of-sequence token does not end a choice, which runs to `max_tokens` (unless a `stop` string ends it). */
  ignore_eos: optional(z.boolean()),
}

export const chatCompletionRequestSchema = z
  .object({
    ...samplingFields,
    messages: z.array(chatCompletionMessageSchema).min(1, 'must contain at least one message'),
    max_completion_tokens: optional(z.number().int().min(1)),
    logprobs: optional(z.boolean()),
    top_logprobs: optional(z.number().int().min(0).max(20)),
    tools: optional(z.array(z.unknown()).max(0, notSupported('tools'))),
  })
  .superRefine((body, context) => {
    if (body.top_logprobs != null && body.logprobs !== true) {
      context.addIssue({ code: 'custom', path: ['top_logprobs'], message: 'needs logprobs: true' })
    }
  })
export type ChatCompletionRequest = z.output<typeof chatCompletionRequestSchema>

export const completionRequestSchema = z.object({
  ...samplingFields,
  prompt: z.union([z.string(), z.array(z.string()).min(1)], { error: 'must be a string or a non-empty list of strings (token-id prompts are not supported)' }),
  /** Number of top log-probabilities per token (0–5); any non-null value returns log-probabilities. */
  logprobs: optional(z.number().int().min(0).max(5)),
  echo: optional(z.boolean().refine((echo) => !echo, notSupported('echo'))),
  suffix: optional(z.string().max(0, notSupported('suffix'))),
  best_of: optional(z.number().int().max(1, notSupported('best_of above 1'))),
})
export type CompletionRequest = z.output<typeof completionRequestSchema>

/** The text of a message's content: a string, or its text parts joined with newlines (as vLLM does). */
export function messageText(content: string | readonly { text: string }[] | null | undefined): string {
  if (content == null) return ''
  return typeof content === 'string' ? content : content.map((part) => part.text).join('\n')
}

/** Chat messages of a request body, as Ludic's `ChatMessage`s (`developer` becomes `system`). */
export function toChatMessages(messages: ChatCompletionRequest['messages']): ChatMessage[] {
  return messages.map((message) => ({
    role: message.role === 'developer' ? 'system' : message.role,
    content: messageText(message.content),
    ...(message.name === undefined ? {} : { name: message.name }),
  }))
}

/**
 * A token's text in log-probability answers: the tokenizer's decoding of it when the server has one,
 * else `token_id:<id>` (vLLM's `return_tokens_as_token_ids` format, which clients can read ids from).
 */
export function tokenText(id: number, tokenizer: TokenizerV1 | undefined): string {
  if (tokenizer !== undefined) {
    try {
      return tokenizer.decode([id])
    } catch {
      // fall through to the id form
    }
  }
  return `token_id:${id}`
}

const tokenIdPattern = /^token_id:(-?\d+)$/

/**
 * Token ids read back from `token_id:<id>` token strings; `undefined` unless every token has that form. The
 * numbers are as written (a negative or huge one included): the caller checks them.
 */
export function tokenIdsFromText(tokens: readonly string[]): number[] | undefined {
  const ids: number[] = []
  for (const token of tokens) {
    const match = tokenIdPattern.exec(token)
    if (match === null) return undefined
    ids.push(Number(match[1]))
  }
  return ids
}

const encoder = new TextEncoder()

export interface ChatLogprobs {
  content: { token: string; logprob: number; bytes: number[] | null; top_logprobs: { token: string; logprob: number; bytes: number[] | null }[] }[]
  refusal: null
}

/**
 * The `logprobs` of a chat choice. Only the sampled token's log-probability is known (a `Completion`
 * has no alternatives), so `top_logprobs` holds at most that token, whatever `top_logprobs` asked.
 */
export function chatLogprobs(completion: Completion, topLogprobs: number, tokenizer: TokenizerV1 | undefined): ChatLogprobs {
  const content = Array.from(completion.tokenIds, (id, index) => {
    const token = tokenText(id, tokenizer)
    const bytes = tokenizer === undefined ? null : Array.from(encoder.encode(token))
    const logprob = completion.logprobs[index]!
    return { token, logprob, bytes, top_logprobs: topLogprobs > 0 ? [{ token, logprob, bytes }] : [] }
  })
  return { content, refusal: null }
}

export interface CompletionLogprobs {
  tokens: string[]
  token_logprobs: number[]
  top_logprobs: Record<string, number>[] | null
  text_offset: number[]
}

/** The legacy `logprobs` of a text completion (top entries limited to the sampled token, as for chat). */
export function completionLogprobs(completion: Completion, topLogprobs: number, tokenizer: TokenizerV1 | undefined): CompletionLogprobs {
  const tokens = Array.from(completion.tokenIds, (id) => tokenText(id, tokenizer))
  const tokenLogprobs = Array.from(completion.logprobs)
  const offsets: number[] = []
  let offset = 0
  for (const token of tokens) {
    offsets.push(offset)
    offset += token.length
  }
  return {
    tokens,
    token_logprobs: tokenLogprobs,
    top_logprobs: topLogprobs > 0 ? tokens.map((token, index) => ({ [token]: tokenLogprobs[index]! })) : null,
    text_offset: offsets,
  }
}

/** An OpenAI error answer: `{ error: { message, type, param, code } }`. */
export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null }
}
