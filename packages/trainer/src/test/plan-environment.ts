import type { ChatMessage, EnvironmentV1, TurnView } from '@ludic/core'

export interface PlanEnvironmentOptions {
  /** Actions per episode. */
  length: number
  /** The reward of a complete plan (the actions joined), given on its last step. */
  reward: (plan: string) => number
  /** The legal actions after `plan`. Default `['a', 'b', 'c']`. */
  legal?: (plan: string) => string[]
  id?: string
  roles?: string[]
}

/**
 * A step-wise test environment: the problem is the letter `'qrst'[seed]`, each turn's observation `q:ab>` (the
 * problem and the plan so far), the episode ends after `length` actions with `reward(plan)`.
 */
export function planEnvironment(options: PlanEnvironmentOptions): () => EnvironmentV1 {
  const { length, reward, legal = () => ['a', 'b', 'c'], id = 'plan-v0', roles = ['player'] } = options
  return () => {
    let problem = 'q'
    let plan = ''
    const view = (): TurnView => ({ role: roles[0]!, observation: `${problem}:${plan}>`, legalActions: legal(plan) })
    return {
      specificationVersion: 'v1',
      id,
      roles,
      reset(seed) {
        problem = 'qrst'[seed] ?? `p${seed}`
        plan = ''
        return view()
      },
      step(action) {
        plan += action
        if (plan.length >= length) return { done: true, truncated: false, rewards: { [roles[0]!]: reward(plan) }, info: {} }
        return { done: false, truncated: false, next: view(), rewards: { [roles[0]!]: 0 }, info: {} }
      },
    }
  }
}

/** The observation as it is: the test tokenizer has no chat template. */
export const plainChatTemplate = (messages: readonly ChatMessage[]) => messages.at(-1)!.content
