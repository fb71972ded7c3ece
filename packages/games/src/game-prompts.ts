import { InvalidArgumentError, type ChatMessage, type TurnView } from '@ludic/core'

/**
 * The games' named prompts. Each is a `@ludic/rollout` `PromptTemplate` string (one user message in which
 * `{observation}` is replaced), so `collect({ prompt: gamePrompts.spiral })` uses it as it is, and
 * `renderGamePrompt` renders it where there is no rollout (`playEpisode`, `kuhnPolicyOf`, scripted tests):
 * - `spiral`: SPIRAL's prompt (games.md): the observation between a zero-sum-game preamble and a request
 *   to reason step by step and answer in `\boxed{}`.
 * - `terse`: the observation alone (`'{observation}'`, also rollout's default); the answer is the bracketed
 *   move. For small models trained from scratch.
 */
export const gamePrompts = {
  spiral:
    'You are playing a two-player zero-sum game. Make valid actions to win.\nObservation: {observation}\n' +
    'Please reason step by step, and put your final answer within \\boxed{}.',
  terse: '{observation}',
} as const satisfies Record<string, string>

export type GamePromptName = keyof typeof gamePrompts

/** The name, checked (an unknown one is an `InvalidArgumentError` listing the names). */
function templateOf(name: GamePromptName, argument: string): string {
  if (!Object.hasOwn(gamePrompts, name)) {
    throw new InvalidArgumentError({ argument, value: name, message: `is not one of ${Object.keys(gamePrompts).join(', ')}` })
  }
  return gamePrompts[name]
}

/**
 * The chat messages of a named game prompt for a turn's view (or a bare observation): one user message, the
 * same as rollout's `renderPrompt(gamePrompts[name], view, …)`.
 */
export function renderGamePrompt(view: TurnView | string, name: GamePromptName): ChatMessage[] {
  const observation = typeof view === 'string' ? view : view.observation
  // A function replacer: `$` sequences in the observation stay literal.
  return [{ role: 'user', content: templateOf(name, 'name').replaceAll('{observation}', () => observation) }]
}

/**
 * The observation inside a prompt: the last user message, with the `spiral` prompt's preamble and closing
 * request removed when present. Scripted opponents read the game from it.
 */
export function observationFromMessages(messages: readonly ChatMessage[]): string {
  const last = [...messages].reverse().find((message) => message.role === 'user')
  if (last === undefined) throw new InvalidArgumentError({ argument: 'messages', value: messages, message: 'has no user message to read the observation from' })
  const [prefix, suffix] = gamePrompts.spiral.split('{observation}') as [string, string]
  const content = last.content
  if (content.startsWith(prefix) && content.endsWith(suffix) && content.length >= prefix.length + suffix.length) {
    return content.slice(prefix.length, content.length - suffix.length)
  }
  return content
}
