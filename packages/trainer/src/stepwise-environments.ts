import {
  InvalidArgumentError,
  type ChatMessage,
  type ChatTemplateFunction,
  type EnvironmentV1,
  type StepOutcome,
  type TokenizerV1,
  type Turn,
  type TurnView,
} from '@ludic/core'
import { historyTurn, renderPrompt, type PromptTemplate } from '@ludic/rollout'
import { chatTemplateRenderer, hasChatTemplate } from '@ludic/tokenizer'

/** A training problem of Flow of Reasoning: one of the environments (its index) and the seed it is reset with. */
export interface StepwiseProblem {
  environment: number
  seed: number
}

/** A finished episode: what the log-reward, the success and P_B of a complete trajectory are read from. */
export interface StepwiseEpisode {
  environmentId: string
  seed: number
  /** The environment's one role. */
  role: string
  actions: readonly string[]
  /** The outcome of the last action (`done` or `truncated`). */
  outcome: StepOutcome
  /** The role's rewards summed over the episode. */
  return: number
}

/** A state reached by `reset(seed)` and the actions so far: open (a decision to take), or the episode's end. */
export type StepwiseState =
  | {
      done: false
      /** The text the model reads: the prompt's messages through the chat template, the generation prompt on. */
      prompt: string
      /** `TurnView.legalActions`, each once, in the environment's order. */
      legalActions: readonly string[]
      view: TurnView
    }
  | { done: true; episode: StepwiseEpisode }

export interface StepwiseEnvironmentOptions {
  /** The prompt of a state (rollout's `PromptTemplate`: a `{observation}` template or a function). Default `'{observation}'`. */
  prompt?: PromptTemplate | undefined
  /** How messages become the prompt text: a Jinja source or a function. Default: the tokenizer's chat template. */
  chatTemplate?: string | ChatTemplateFunction | ((messages: readonly ChatMessage[]) => string) | undefined
}

/**
 * Core's environments as step-wise tasks (Flow of Reasoning's): a state is an environment reset with a seed and
 * the actions taken since, replayed (`reset(seed)`, then `step` for each action: an environment is deterministic
 * for a seed, `EnvironmentV1`'s contract), so any state can be branched from without a snapshot. The actions
 * allowed at a state are its `TurnView.legalActions`; a state is complete when an action ends the episode
 * (`done` or `truncated`).
 */
export interface StepwiseEnvironments {
  /** The environments' ids, in order. */
  readonly ids: readonly string[]
  /** The state after `actions` (memoised until `clear`). */
  state(problem: StepwiseProblem, actions: readonly string[]): StepwiseState
  /** Forgets the memoised states. */
  clear(): void
}

/** States memoised at most: past it the memo starts over (a bound on memory, not on correctness). */
const maxMemoised = 65_536

/**
 * Makes the step-wise view of `environments` (factories: each is called once here; every environment has one role,
 * and the ids differ). Bad input is an `InvalidArgumentError` naming `argument` (and `argument[i]`).
 */
export function createStepwiseEnvironments(
  tokenizer: TokenizerV1,
  environments: readonly (() => EnvironmentV1)[],
  options: StepwiseEnvironmentOptions = {},
  argument = 'environments',
): StepwiseEnvironments {
  const instances = environments.map((make, index) => {
    const environment = make()
    if (environment.roles.length !== 1)
      throw new InvalidArgumentError({
        argument: `${argument}[${index}]`,
        value: environment.id,
        message: `has ${environment.roles.length} roles (${environment.roles.join(', ')}): a step-wise task has one`,
      })
    return environment
  })
  const ids = instances.map((environment) => environment.id)
  const repeated = ids.find((id, index) => ids.indexOf(id) !== index)
  if (repeated !== undefined) throw new InvalidArgumentError({ argument, value: repeated, message: 'has two environments with this id (ids must differ)' })
  const render = chatRenderer(tokenizer, options.chatTemplate)
  const prompt = options.prompt ?? '{observation}'
  const memo = new Map<string, StepwiseState>()

  const replay = ({ environment: index, seed }: StepwiseProblem, actions: readonly string[]): StepwiseState => {
    const environment = instances[index]
    if (environment === undefined)
      throw new InvalidArgumentError({ argument: 'problem.environment', value: index, message: `must be below ${instances.length}` })
    const [role] = environment.roles as [string]
    const where = (count: number) => `${environment.id} (seed ${seed}) after ${JSON.stringify(actions.slice(0, count))}`
    let view = environment.reset(seed)
    const history: Turn[] = []
    let total = 0
    for (;;) {
      const legalActions = [...new Set(view.legalActions ?? [])]
      if (legalActions.length === 0)
        throw new InvalidArgumentError({
          argument,
          value: environment.id,
          message: `gives no legalActions at ${where(history.length)}, an open state: Flow of Reasoning chooses among TurnView.legalActions`,
        })
      if (history.length === actions.length) {
        const messages = renderPrompt(prompt, view, history, { environmentId: environment.id, role: view.role, turnIndex: history.length, seed })
        return { done: false, prompt: render(messages), legalActions, view }
      }
      const action = actions[history.length]!
      if (!legalActions.includes(action))
        throw new InvalidArgumentError({
          argument: 'actions',
          value: action,
          message: `is not a legal action of ${where(history.length)} (a replayed plan must stay legal)`,
        })
      const outcome = environment.step(action)
      if (outcome.info.invalidAction === true)
        throw new InvalidArgumentError({
          argument,
          value: environment.id,
          message: `refused its own legal action ${JSON.stringify(action)} at ${where(history.length)}: ${outcome.info.reason ?? 'no reason given'}`,
        })
      total += outcome.rewards[role] ?? 0
      history.push(historyTurn(history.length, view, action, outcome))
      if (outcome.done || outcome.truncated) {
        if (history.length < actions.length)
          throw new InvalidArgumentError({
            argument: 'actions',
            value: actions[history.length],
            message: `follows the end of the episode of ${where(history.length)}`,
          })
        return { done: true, episode: { environmentId: environment.id, seed, role, actions: [...actions], outcome, return: total } }
      }
      view = outcome.next!
    }
  }

  return {
    ids,
    state(problem, actions) {
      const key = `${problem.environment} ${problem.seed} ${JSON.stringify(actions)}`
      let state = memo.get(key)
      if (state === undefined) {
        state = replay(problem, actions)
        if (memo.size >= maxMemoised) memo.clear()
        memo.set(key, state)
      }
      return state
    },
    clear: () => memo.clear(),
  }
}

/** The prompt text of messages: the Jinja source (with the tokenizer's special tokens), the function, or the tokenizer's template. */
function chatRenderer(tokenizer: TokenizerV1, chatTemplate: StepwiseEnvironmentOptions['chatTemplate']): (messages: readonly ChatMessage[]) => string {
  if (typeof chatTemplate === 'function') return (messages) => chatTemplate(messages, { addGenerationPrompt: true })
  if (typeof chatTemplate === 'string') {
    const render = chatTemplateRenderer(tokenizer, chatTemplate)
    return (messages) => render(messages, { addGenerationPrompt: true })
  }
  if (!hasChatTemplate(tokenizer))
    throw new InvalidArgumentError({ argument: 'chatTemplate', value: undefined, message: 'is needed: the tokenizer has no chat template' })
  return (messages) => tokenizer.applyChatTemplate!(messages, { addGenerationPrompt: true })
}
