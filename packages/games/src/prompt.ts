import { InvalidArgumentError, type ChatMessage, type TurnView } from '@ludic/core'

/**
 * How an observation becomes a chat prompt. `user` (and `system`, when given) may hold `{observation}`,
 * replaced by the observation text.
 */
export interface PromptTemplate {
  readonly name: string
  readonly system?: string
  readonly user: string
}

/**
 * The built-in templates:
 * - `spiral`: SPIRAL's prompt (games.md): the observation between a zero-sum-game preamble and a request
 *   to reason step by step and answer in `\boxed{}`.
 * - `terse`: the observation alone; the answer is the bracketed move. For small models trained from scratch.
 */
export const promptTemplates = {
  spiral: {
    name: 'spiral',
    user:
      'You are playing a two-player zero-sum game. Make valid actions to win.\nObservation: {observation}\n' +
      'Please reason step by step, and put your final answer within \\boxed{}.',
  },
  terse: { name: 'terse', user: '{observation}' },
} as const satisfies Record<string, PromptTemplate>

export type PromptTemplateName = keyof typeof promptTemplates

function resolveTemplate(template: PromptTemplateName | PromptTemplate): PromptTemplate {
  if (typeof template === 'string') {
    const found = (promptTemplates as Record<string, PromptTemplate>)[template]
    if (found === undefined) {
      throw new InvalidArgumentError({ argument: 'template', value: template, message: `is not one of ${Object.keys(promptTemplates).join(', ')}` })
    }
    return found
  }
  if (typeof template?.user !== 'string' || !template.user.includes('{observation}')) {
    throw new InvalidArgumentError({ argument: 'template.user', value: template?.user, message: "must be a string containing '{observation}'" })
  }
  return template
}

/** Chat messages for a turn: the template applied to the view's observation (or to a bare observation). */
export function renderPrompt(view: TurnView | string, template: PromptTemplateName | PromptTemplate = 'spiral'): ChatMessage[] {
  const observation = typeof view === 'string' ? view : view.observation
  const resolved = resolveTemplate(template)
  // A function replacer: `$` sequences in the observation stay literal.
  const fill = (text: string) => text.replaceAll('{observation}', () => observation)
  const messages: ChatMessage[] = []
  if (resolved.system !== undefined) messages.push({ role: 'system', content: fill(resolved.system) })
  messages.push({ role: 'user', content: fill(resolved.user) })
  return messages
}

/**
 * The observation inside a prompt: the last user message, with the `spiral` template's preamble and
 * closing request removed when present. Scripted opponents read the game from it.
 */
export function observationFromMessages(messages: readonly ChatMessage[]): string {
  const last = [...messages].reverse().find((message) => message.role === 'user')
  if (last === undefined) throw new InvalidArgumentError({ argument: 'messages', value: messages, message: 'has no user message to read the observation from' })
  const [prefix, suffix] = promptTemplates.spiral.user.split('{observation}') as [string, string]
  const content = last.content
  if (content.startsWith(prefix) && content.endsWith(suffix) && content.length >= prefix.length + suffix.length) {
    return content.slice(prefix.length, content.length - suffix.length)
  }
  return content
}
