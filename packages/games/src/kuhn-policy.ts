import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { z } from 'zod'

/**
 * The 12 information states of one round of Kuhn Poker, named as OpenSpiel names them: the acting
 * player's card (0 = J, 1 = Q, 2 = K) then the round's history (`p` = check or fold, `b` = bet or call).
 * `"0"`, `"1"`, `"2"`, `"0pb"`, `"1pb"`, `"2pb"` belong to the round's first actor ("player 0" of the
 * round); `"0p"`, `"0b"`, `"1p"`, `"1b"`, `"2p"`, `"2b"` to the second.
 */
export const kuhnInformationStateNames = ['0', '1', '2', '0pb', '1pb', '2pb', '0p', '0b', '1p', '1b', '2p', '2b'] as const
export type KuhnInformationStateName = (typeof kuhnInformationStateNames)[number]

/**
 * A tabular policy for one round of Kuhn Poker: at each information state, the probability of the
 * aggressive action (bet, or call when facing a bet). The passive action (check, or fold) gets the rest.
 */
export type KuhnPolicy = Readonly<Record<KuhnInformationStateName, number>>

const probability = z.number().min(0, 'must be a probability in [0, 1]').max(1, 'must be a probability in [0, 1]')
export const kuhnPolicySchema = z.strictObject(
  Object.fromEntries(kuhnInformationStateNames.map((name) => [name, probability])) as Record<KuhnInformationStateName, typeof probability>,
)

/** Checks a tabular policy: the 12 states, each a probability. Throws an `InvalidArgumentError` naming the state. */
export function parseKuhnPolicy(policy: unknown, argument = 'policy'): KuhnPolicy {
  return parseArgument(kuhnPolicySchema, policy, argument)
}

/** The same probability of the aggressive action everywhere (0.5: uniform random; 0: always the first legal action). */
export function kuhnConstantPolicy(aggressive: number): KuhnPolicy {
  return parseKuhnPolicy(Object.fromEntries(kuhnInformationStateNames.map((name) => [name, aggressive])), 'aggressive')
}

/**
 * A Nash equilibrium of Kuhn Poker, OpenSpiel's `GetOptimalPolicy(alpha)`, α ∈ [0, 1/3]: the first actor
 * bets a J with probability α, a K with 3α, and calls a bet after checking a Q with 1/3 + α; the second
 * actor bets a J after a check with 1/3 and calls a bet with a Q with 1/3. Every α gives the game value
 * −1/18 to the first actor.
 */
export function kuhnNashPolicy(alpha: number): KuhnPolicy {
  if (!(alpha >= 0 && alpha <= 1 / 3)) throw new InvalidArgumentError({ argument: 'alpha', value: alpha, message: 'must be in [0, 1/3]' })
  return {
    '0': alpha,
    '1': 0,
    '2': 3 * alpha,
    '0pb': 0,
    '1pb': 1 / 3 + alpha,
    '2pb': 1,
    '0p': 1 / 3,
    '0b': 0,
    '1p': 0,
    '1b': 1 / 3,
    '2p': 1,
    '2b': 1,
  }
}
