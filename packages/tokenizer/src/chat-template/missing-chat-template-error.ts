import { LudicError } from '@ludic/core'

const marker = Symbol.for('ludic.error.MissingChatTemplateError')

/**
 * A chat was to be rendered with a tokenizer that has no chat template (no `chat_template` in its
 * `tokenizer_config.json`) and none was given: a configuration to complete, not a fault of the messages.
 */
export class MissingChatTemplateError extends LudicError {
  private readonly [marker] = true
  override readonly name: string = 'MissingChatTemplateError'

  static override isInstance(error: unknown): error is MissingChatTemplateError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true
  }
}
