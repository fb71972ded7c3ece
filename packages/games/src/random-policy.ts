import type { PolicyV1, TurnContext } from '@ludic/core'
import { turnLegalActions } from './legal-actions.js'
import { createOpponentPolicy } from './opponent-policy.js'

export interface RandomPolicyOptions {
  /** Seed of the policy's random stream (requests with their own `seed` use that instead). Default: 0. */
  seed?: number
  /**
   * The moves to choose among, given the observation and the request's turn view. Default: `turnLegalActions`
   * (the turn's `legalActions`; Simple Negotiation's menu from its `state`), which refuses a request without a turn.
   */
  legalActions?: (observation: string, turn: TurnContext | undefined) => readonly string[]
  id?: string
}

/** An opponent that plays uniformly at random among the legal actions of the request's turn (`turnLegalActions`). */
export function createRandomPolicy(options: RandomPolicyOptions = {}): PolicyV1 {
  const id = options.id ?? 'random'
  const legalActions = options.legalActions ?? ((_observation: string, turn: TurnContext | undefined) => turnLegalActions(turn, `the random player '${id}'`))
  return createOpponentPolicy({
    id,
    seed: options.seed ?? 0,
    decide: (observation, random, turn) => random.choice(legalActions(observation, turn)),
  })
}
