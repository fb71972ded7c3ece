import { InvalidArgumentError, type PolicyV1, type TurnContext } from '@ludic/core'
import { kuhnBestResponse } from './kuhn-exploitability.js'
import { kuhnLegalActions } from './kuhn-poker.js'
import { kuhnInformationStateNames, kuhnNashPolicy, parseKuhnPolicy, type KuhnInformationStateName, type KuhnPolicy } from './kuhn-policy.js'
import { createOpponentPolicy, requireTurn } from './opponent-policy.js'

/**
 * The information state (OpenSpiel's name, e.g. `"1pb"`) of a Kuhn Poker turn, from its structured view
 * (`TurnView.state.informationState` of `kuhn-poker-v1`, passed on as `GenerationRequest.turn`). A turn without
 * it, or with a name that is not a decision, is an `InvalidArgumentError` naming the field.
 */
export function kuhnTurnInformationState(turn: TurnContext | undefined, who = 'the Kuhn Poker player'): KuhnInformationStateName {
  const name = requireTurn(turn, 'state', who).state.informationState
  if (typeof name !== 'string' || !(kuhnInformationStateNames as readonly string[]).includes(name)) {
    throw new InvalidArgumentError({
      argument: 'request.turn.state.informationState',
      value: name,
      message: `must be one of Kuhn Poker's information states (${kuhnInformationStateNames.join(', ')}); environment '${turn!.environmentId}' is not Kuhn Poker?`,
    })
  }
  return name as KuhnInformationStateName
}

export interface KuhnTabularPolicyOptions {
  /** Probability of the aggressive action at each information state. */
  policy: KuhnPolicy
  /** Seed of the policy's random stream. Default: 0. */
  seed?: number
  id?: string
}

/**
 * A Kuhn Poker opponent that plays a tabular policy: it takes its information state from the request's turn view
 * (`kuhnTurnInformationState`, never from the observation's wording) and plays the aggressive action (`[bet]` / `[call]`) with the policy's
 * probability, else the passive one (`[check]` / `[fold]`). The policy is per round, whatever the number
 * of rounds.
 */
export function createKuhnTabularPolicy(options: KuhnTabularPolicyOptions): PolicyV1 {
  const policy = parseKuhnPolicy(options.policy, 'options.policy')
  const id = options.id ?? 'kuhn-tabular'
  return createOpponentPolicy({
    id,
    seed: options.seed ?? 0,
    decide(_observation, random, turn) {
      const state = kuhnTurnInformationState(turn, `the Kuhn Poker player '${id}'`)
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
