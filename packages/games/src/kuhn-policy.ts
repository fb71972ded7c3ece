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

/**
 * The average of tabular policies as the mixed strategy plays it (one of `policies` drawn per round by `weights`,
 * equal by default), written back as one behavioural policy (Kuhn's theorem). Where the player arrives by an earlier
 * choice of its own — the first actor's `"Xpb"`, reached by checking X — each policy counts by how often it gets
 * there; elsewhere the average is the weighted mean:
 *
 *   π̄(Xpb) = Σᵢ wᵢ (1 − πᵢ(X)) πᵢ(Xpb) / Σᵢ wᵢ (1 − πᵢ(X)),   π̄(s) = Σᵢ wᵢ πᵢ(s) / Σᵢ wᵢ otherwise.
 *
 * The average strategy of fictitious play and CFR (Heinrich & Silver 2016, NFSP; OpenSpiel's `average_policy`,
 * reach-weighted): self-play's iterates can cycle around an equilibrium while their average converges to it. A
 * state no policy reaches (every πᵢ(X) = 1) gets the weighted mean. `InvalidArgumentError` for no policies, a
 * weight that is negative or not finite, weights of another length than the policies, or weights summing to 0.
 */
export function kuhnAveragePolicy(policies: readonly KuhnPolicy[], weights?: readonly number[]): KuhnPolicy {
  if (policies.length === 0) throw new InvalidArgumentError({ argument: 'policies', value: policies, message: 'must hold at least one policy' })
  const checked = policies.map((policy, index) => parseKuhnPolicy(policy, `policies.${index}`))
  const w = weights ?? checked.map(() => 1)
  if (w.length !== checked.length)
    throw new InvalidArgumentError({ argument: 'weights', value: w.length, message: `must hold one weight per policy (${checked.length})` })
  w.forEach((weight, index) => {
    if (!(Number.isFinite(weight) && weight >= 0))
      throw new InvalidArgumentError({ argument: `weights.${index}`, value: weight, message: 'must be finite and ≥ 0' })
  })
  const total = w.reduce((sum, weight) => sum + weight, 0)
  if (!(total > 0)) throw new InvalidArgumentError({ argument: 'weights', value: w, message: 'must sum to more than 0' })
  const mean = (name: KuhnInformationStateName) => checked.reduce((sum, policy, index) => sum + w[index]! * policy[name], 0) / total
  const average: Record<string, number> = {}
  for (const name of kuhnInformationStateNames) {
    if (!name.endsWith('pb')) {
      average[name] = mean(name)
      continue
    }
    const opening = name.slice(0, 1) as KuhnInformationStateName
    const reach = checked.map((policy, index) => w[index]! * (1 - policy[opening]))
    const reached = reach.reduce((sum, value) => sum + value, 0)
    average[name] = reached > 0 ? checked.reduce((sum, policy, index) => sum + reach[index]! * policy[name], 0) / reached : mean(name)
  }
  // A weighted mean of probabilities, clamped against the last bit of rounding.
  for (const name of kuhnInformationStateNames) average[name] = Math.min(1, Math.max(0, average[name]!))
  return parseKuhnPolicy(average, 'average')
}
