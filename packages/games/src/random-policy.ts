import type { PolicyV1 } from '@ludic/core'
import { legalActionsFromObservation } from './legal-actions.js'
import { createOpponentPolicy } from './opponent-policy.js'

export interface RandomPolicyOptions {
  /** Seed of the policy's random stream (requests with their own `seed` use that instead). Default: 0. */
  seed?: number
  /** Reads the legal actions from an observation. Default: `legalActionsFromObservation` (every game of this package). */
  legalActions?: (observation: string) => readonly string[]
  id?: string
}

/** An opponent that plays uniformly at random among the legal actions it reads from the observation. */
export function createRandomPolicy(options: RandomPolicyOptions = {}): PolicyV1 {
  const legalActions = options.legalActions ?? legalActionsFromObservation
  return createOpponentPolicy({
    id: options.id ?? 'random',
    seed: options.seed ?? 0,
    decide: (observation, random) => random.choice(legalActions(observation)),
  })
}
