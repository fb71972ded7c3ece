import type { PolicyV1 } from '@ludic/core'
import { kuhnBestResponse } from './kuhn-exploitability.js'
import { kuhnInformationStateOf } from './kuhn-information-states.js'
import { kuhnLegalActions } from './kuhn-poker.js'
import { kuhnNashPolicy, parseKuhnPolicy, type KuhnPolicy } from './kuhn-policy.js'
import { createOpponentPolicy } from './opponent-policy.js'

export interface KuhnTabularPolicyOptions {
  /** Probability of the aggressive action at each information state. */
  policy: KuhnPolicy
  /** Seed of the policy's random stream. Default: 0. */
  seed?: number
  id?: string
}

/**
 * A Kuhn Poker opponent that plays a tabular policy: it reads its information state from the observation
 * (`kuhnInformationStateOf`) and plays the aggressive action (`[bet]` / `[call]`) with the policy's
 * probability, else the passive one (`[check]` / `[fold]`). The policy is per round, whatever the number
 * of rounds.
 */
export function createKuhnTabularPolicy(options: KuhnTabularPolicyOptions): PolicyV1 {
  const policy = parseKuhnPolicy(options.policy, 'options.policy')
  return createOpponentPolicy({
    id: options.id ?? 'kuhn-tabular',
    seed: options.seed ?? 0,
    decide(observation, random) {
      const state = kuhnInformationStateOf(observation)
      const [passive, aggressive] = kuhnLegalActions(state.slice(1)) as [string, string]
      const probability = policy[state]
      // Draw only for mixed states, so deterministic states do not advance the stream.
      if (probability >= 1) return aggressive
      if (probability <= 0) return passive
      return random.nextFloat() < probability ? aggressive : passive
    },
  })
}

/** A Nash-equilibrium Kuhn Poker opponent, OpenSpiel's `GetOptimalPolicy(alpha)`. Default α: 0. */
export function createKuhnNashPolicy(options: { alpha?: number; seed?: number; id?: string } = {}): PolicyV1 {
  const alpha = options.alpha ?? 0
  return createKuhnTabularPolicy({ policy: kuhnNashPolicy(alpha), seed: options.seed ?? 0, id: options.id ?? `kuhn-nash-${alpha}` })
}

/**
 * A Kuhn Poker opponent that best-responds to a tabular policy (`kuhnBestResponse`), in whichever
 * position it sits. Deterministic; indifferent states play the passive action.
 */
export function createKuhnBestResponsePolicy(options: { policy: KuhnPolicy; id?: string }): PolicyV1 {
  return createKuhnTabularPolicy({ policy: kuhnBestResponse(options.policy), id: options.id ?? 'kuhn-best-response' })
}
