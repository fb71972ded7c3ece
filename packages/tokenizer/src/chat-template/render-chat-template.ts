import { LudicError, type TokenizerV1 } from '@ludic/core'
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

/** The special tokens a template sees for `tokenizer` (`bos_token`, `eos_token`, `pad_token`: those it has), as transformers passes them. */
export function chatTemplateSpecialTokens(tokenizer: TokenizerV1): Record<string, string> {
  const specialTokens: Record<string, string> = {}
  for (const [key, id] of [
    ['bos_token', tokenizer.bosTokenId],
    ['eos_token', tokenizer.eosTokenId],
    ['pad_token', tokenizer.padTokenId],
  ] as const) {
    const token = id === undefined ? undefined : tokenizer.idToToken(id)
    if (token !== undefined) specialTokens[key] = token
  }
  return specialTokens
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
