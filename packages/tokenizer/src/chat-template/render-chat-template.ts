import { LudicError, type ChatTemplateFunction, type TokenizerV1 } from '@ludic/core'
import { MissingChatTemplateError } from './missing-chat-template-error.js'
import { defaultTokenizerLimits, TokenizerLimitError, type TokenizerLimits } from '../tokenizer-limits.js'
import { compilePythonCompatibleTemplate, type CompiledTemplate } from './python-compatible-template.js'

export interface ChatTemplateContext {
  messages: readonly Record<string, unknown>[]
  addGenerationPrompt: boolean
  tools?: readonly Record<string, unknown>[] | undefined
  /** The special tokens transformers passes (`bos_token`, `eos_token`…). */
  specialTokens: Readonly<Record<string, unknown>>
  /** Further variables for the template (`enable_thinking`, `date_string`…). */
  variables?: Readonly<Record<string, unknown>> | undefined
}

const compiledTemplates = new Map<string, CompiledTemplate>()

/**
 * A Jinja chat template `source` as a function of messages, rendered (`renderChatTemplate`) with the special tokens of
 * `tokenizer` that transformers passes to `apply_chat_template` (`bos_token`, `eos_token`, `pad_token`: those it has).
 */
export function chatTemplateRenderer(tokenizer: TokenizerV1, source: string): ChatTemplateFunction {
  const specialTokens: Record<string, string> = {}
  for (const [key, id] of [
    ['bos_token', tokenizer.bosTokenId],
    ['eos_token', tokenizer.eosTokenId],
    ['pad_token', tokenizer.padTokenId],
  ] as const) {
    const token = id === undefined ? undefined : tokenizer.idToToken(id)
    if (token !== undefined) specialTokens[key] = token
  }
  return (messages, { addGenerationPrompt }) => renderChatTemplate(source, { messages, addGenerationPrompt, specialTokens })
}

/** Whether `tokenizer` renders chats (a `@ludic/tokenizer` one without `chat_template` has the method but refuses). */
export function hasChatTemplate(tokenizer: TokenizerV1): boolean {
  if (tokenizer.applyChatTemplate === undefined) return false
  try {
    tokenizer.applyChatTemplate([{ role: 'user', content: '' }], { addGenerationPrompt: true })
    return true
  } catch (error) {
    if (MissingChatTemplateError.isInstance(error)) return false
    throw error
  }
}

/**
 * Renders a chat template as transformers' `apply_chat_template` does: variables `messages`, `tools`
 * (None without tools), `add_generation_prompt`, the special tokens, and any extra variables. The rendering
 * is bounded as Python Jinja's sandbox bounds it, and more (`range` length, string and list lengths, steps,
 * time: the `maxChatTemplate…` limits); past one, a `TokenizerLimitError`. Other failures (a template's
 * `raise_exception`, a syntax error) are `LudicError`s.
 */
export function renderChatTemplate(source: string, context: ChatTemplateContext, limits: TokenizerLimits = defaultTokenizerLimits): string {
  let template = compiledTemplates.get(source)
  if (template === undefined) {
    try {
      template = compilePythonCompatibleTemplate(source)
    } catch (error) {
      throw new LudicError(`cannot parse the chat template: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
    }
    compiledTemplates.set(source, template)
  }
  const messages = context.messages.map((message) => Object.fromEntries(Object.entries(message).filter(([, value]) => value !== undefined)))
  try {
    return template.render(
      {
        ...context.specialTokens,
        ...context.variables,
        messages,
        tools: context.tools === undefined || context.tools.length === 0 ? null : context.tools,
        add_generation_prompt: context.addGenerationPrompt,
      },
      limits,
    )
  } catch (error) {
    if (TokenizerLimitError.isInstance(error)) throw error
    throw new LudicError(`cannot render the chat template: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
  }
}
