import { chatMessageSchema, parseInput, type ChatMessage, type StepOutcome, type Turn, type TurnView } from '@ludic/core'
import { z } from 'zod'

/** What a prompt function knows besides the view and the history. */
export interface PromptContext {
  environmentId: string
  /** The role to act (same as `view.role`). */
  role: string
  /** 0-based index of the turn about to be played. */
  turnIndex: number
  /** The seed the environment was reset with. */
  seed: number
}

/**
 * Builds the chat a policy sees from the current view and the turns played so far (every role's, in
 * order; filter by `turn.role` for one role's own history).
 */
export type PromptFunction = (view: TurnView, history: readonly Turn[], context: PromptContext) => ChatMessage[]

/**
 * A prompt: a function, or a string rendered as one user message in which `{observation}`, `{role}` and
 * `{legalActions}` (comma-separated) are replaced. Default `'{observation}'`: one user message with the
 * observation, as TextArena-style environments put what a role needs into its observation. The games'
 * named prompts (`gamePrompts.spiral`, `gamePrompts.terse` of `@ludic/games`) are templates of this kind.
 */
export type PromptTemplate = string | PromptFunction

export const defaultPromptTemplate = '{observation}'

const placeholder = /\{(observation|role|legalActions)\}/g
const messagesSchema = z.array(chatMessageSchema).min(1, 'needs at least one message')

/** Renders a prompt template; a function's answer is checked (a non-empty list of chat messages). */
export function renderPrompt(template: PromptTemplate, view: TurnView, history: readonly Turn[], context: PromptContext): ChatMessage[] {
  if (typeof template === 'string') {
    // One pass, so an observation that happens to contain '{role}' is left as it is.
    const content = template.replace(placeholder, (_, name: string) =>
      name === 'observation' ? view.observation : name === 'role' ? view.role : (view.legalActions ?? []).join(', '),
    )
    return [{ role: 'user', content }]
  }
  const messages = template(view, history, context)
  return parseInput(messagesSchema, messages, { source: 'the prompt function' })
}

/**
 * The turn a prompt's history records when `view`'s role took `action` and the environment answered `outcome`: the
 * fields `collect` records (its policy's completion and id aside), so that a prompt function sees the same history
 * in random legal play and in Flow of Reasoning's replays as in a rollout.
 */
export function historyTurn(index: number, view: TurnView, action: string, outcome: StepOutcome): Turn {
  return {
    index,
    role: view.role,
    observation: view.observation,
    ...(view.legalActions === undefined ? {} : { legalActions: view.legalActions }),
    ...(view.stateKey === undefined ? {} : { stateKey: view.stateKey }),
    action,
    rewards: outcome.rewards,
    invalidAction: outcome.info.invalidAction === true,
  }
}
