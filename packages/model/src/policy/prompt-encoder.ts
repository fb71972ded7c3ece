import { InvalidArgumentError, LudicError, type ChatMessage, type GenerationRequest, type TokenizerV1 } from '@ludic/core'
import { chatTemplateRenderer, MissingChatTemplateError } from '@ludic/tokenizer'

export interface PromptEncoderOptions {
  /**
   * How messages become the prompt: a Jinja chat template (rendered as transformers'
   * `apply_chat_template(…, add_generation_prompt=True)` with the tokenizer's special tokens) or a function.
   * Default: the tokenizer's own template.
   */
  chatTemplate?: string | ((messages: readonly ChatMessage[]) => string) | undefined
  /**
   * Special-token text in the messages is encoded as plain text (the tokenizer's `encodeChat` with
   * `splitSpecialTokens`); only the template's special tokens are special. False reads special tokens anywhere.
   * Default: true when the tokenizer has `encodeChat` (every `@ludic/tokenizer` one), else false (a tokenizer
   * without it cannot tell the messages' text from the template's); true with such a tokenizer is refused.
   */
  splitSpecialTokens?: boolean | undefined
  /** Who encodes, in errors. */
  who: string
}

/**
 * How a local model's prompts are encoded (`createLocalPolicy`, and the replay of demonstrations that must match
 * it), as `(request, index) => ids`:
 *
 * - a chat (`messages`) is rendered with the chat template and the generation prompt, no special tokens added (as
 *   transformers' `apply_chat_template(…, tokenize=True)`), through the tokenizer's `encodeChat` with
 *   `splitSpecialTokens`, so that text from outside (a server's clients, a user simulator, a character card) cannot
 *   write the template's control tokens. With no template (none given, the tokenizer has none), a chat is refused at
 *   its request with an `InvalidArgumentError` naming `requests[i].messages`: a configuration to complete, which
 *   a server answers with 400; so is a chat the template refuses (its `raise_exception`, such as "roles must
 *   alternate", or a rendering past the tokenizer's limits: a `LudicError` of the tokenizer), as vLLM answers 400;
 * - a raw `prompt` is encoded as it is, as vLLM's `/v1/completions` does by default: special-token text is read as
 *   special tokens (the prompt is all the client's) and the post-processor's special tokens (BOS) are added.
 *
 * A tokenizer without `encodeChat` cannot keep special-token text plain: with `splitSpecialTokens: true` it is
 * refused here (`InvalidArgumentError` naming `options.splitSpecialTokens`).
 */
export function createPromptEncoder(tokenizer: TokenizerV1, options: PromptEncoderOptions): (request: GenerationRequest, index: number) => Int32Array {
  const { chatTemplate, who } = options
  const splitSpecialTokens = options.splitSpecialTokens ?? tokenizer.encodeChat !== undefined
  if (splitSpecialTokens && tokenizer.encodeChat === undefined) {
    throw new InvalidArgumentError({
      argument: 'options.splitSpecialTokens',
      value: true,
      message: "needs a tokenizer with encodeChat (@ludic/tokenizer's): this one cannot keep special-token text in messages plain",
    })
  }
  const render = typeof chatTemplate === 'string' ? jinjaRenderer(tokenizer, chatTemplate) : chatTemplate
  const refused = (index: number, messages: readonly ChatMessage[], message: string, cause?: unknown) =>
    new InvalidArgumentError({ argument: `requests[${index}].messages`, value: messages, message, cause })
  const noTemplate = `${who} has no chat template (the tokenizer has none and none was given): send a raw prompt, or give a chat template`
  const encode = (messages: readonly ChatMessage[], index: number): Int32Array => {
    if (tokenizer.encodeChat !== undefined)
      return tokenizer.encodeChat(messages, { addGenerationPrompt: true, splitSpecialTokens, ...(render === undefined ? {} : { chatTemplate: render }) })
    if (render !== undefined) return tokenizer.encode(render(messages), { addSpecialTokens: false })
    if (tokenizer.applyChatTemplate === undefined) throw refused(index, messages, noTemplate)
    return tokenizer.encode(tokenizer.applyChatTemplate(messages, { addGenerationPrompt: true }), { addSpecialTokens: false })
  }
  const encodeChat = (messages: readonly ChatMessage[], index: number): Int32Array => {
    try {
      return encode(messages, index)
    } catch (error) {
      if (InvalidArgumentError.isInstance(error)) throw error
      if (MissingChatTemplateError.isInstance(error)) throw refused(index, messages, noTemplate, error)
      // The template refused these messages, or rendering them passed a limit: the request's doing, not a fault.
      if (LudicError.isInstance(error)) throw refused(index, messages, `cannot be rendered with the chat template: ${error.message}`, error)
      throw error
    }
  }
  return (request, index) => (request.messages === undefined ? tokenizer.encode(request.prompt ?? '') : encodeChat(request.messages, index))
}

/** A Jinja template rendered with the tokenizer's special tokens (`chatTemplateRenderer`), the generation prompt on. */
function jinjaRenderer(tokenizer: TokenizerV1, source: string): (messages: readonly ChatMessage[]) => string {
  const render = chatTemplateRenderer(tokenizer, source)
  return (messages) => render(messages, { addGenerationPrompt: true })
}
