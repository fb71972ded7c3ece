import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { kuhnExploitability, kuhnMatch } from './kuhn-exploitability.js'
import { kuhnAveragePolicy, kuhnConstantPolicy, kuhnInformationStateNames, kuhnNashPolicy, parseKuhnPolicy, type KuhnPolicy } from './kuhn-policy.js'

describe('Kuhn tabular policies', () => {
  it("name OpenSpiel's 12 information states", () => {
    expect(kuhnInformationStateNames).toEqual(['0', '1', '2', '0pb', '1pb', '2pb', '0p', '0b', '1p', '1b', '2p', '2b'])
  })

  it("give OpenSpiel's GetOptimalPolicy(α)", () => {
    expect(kuhnNashPolicy(0.1)).toEqual({
      '0': 0.1,
      '1': 0,
      '2': 0.1 * 3,
      '0pb': 0,
      '1pb': 1 / 3 + 0.1,
      '2pb': 1,
      '0p': 1 / 3,
      '0b': 0,
      '1p': 0,
      '1b': 1 / 3,
      '2p': 1,
      '2b': 1,
    })
    expect(kuhnNashPolicy(1 / 3)['2']).toBe(1)
    expect(() => kuhnNashPolicy(-0.01)).toThrow(InvalidArgumentError)
    expect(() => kuhnNashPolicy(Number.NaN)).toThrow(/alpha/)
  })

  it('build constant policies and check tables', () => {
    expect(Object.values(kuhnConstantPolicy(0.25))).toEqual(new Array(12).fill(0.25))
    expect(() => kuhnConstantPolicy(2)).toThrow(/aggressive/)
    expect(() => parseKuhnPolicy({ ...kuhnConstantPolicy(0.5), '3': 0.5 })).toThrow(InvalidArgumentError)
    expect(() => parseKuhnPolicy('uniform')).toThrow(/policy/)
  })

  it("average policies as the mixture plays them: every match is the weighted mean of the policies' matches", () => {
    // Seeded tables (a fixed linear congruential sequence), far from each other and from uniform.
    let state = 12345
    const next = () => {
      state = (state * 1103515245 + 12345) % 2147483648
      return state / 2147483648
    }
    const table = (): KuhnPolicy => Object.fromEntries(kuhnInformationStateNames.map((name) => [name, next()])) as KuhnPolicy
    const policies = [table(), table(), table()]
    const weights = [1, 3, 0.5]
    const average = kuhnAveragePolicy(policies, weights)
    const weighted = (figure: (policy: KuhnPolicy) => number) => policies.reduce((sum, policy, index) => sum + weights[index]! * figure(policy), 0) / 4.5
    for (const opponent of [table(), kuhnConstantPolicy(0.5), kuhnNashPolicy(0.2)]) {
      expect(kuhnMatch(average, opponent).meanReward).toBeCloseTo(
        weighted((policy) => kuhnMatch(policy, opponent).meanReward),
        12,
      )
      expect(kuhnMatch(average, opponent).winRate).toBeCloseTo(
        weighted((policy) => kuhnMatch(policy, opponent).winRate),
        12,
      )
      expect(kuhnMatch(opponent, average).meanReward).toBeCloseTo(
        weighted((policy) => kuhnMatch(opponent, policy).meanReward),
        12,
      )
    }
    // The plain mean of the tables is another policy (it misweights "Xpb", reached by checking X): it fails the same check.
    const plain = Object.fromEntries(
      kuhnInformationStateNames.map((name) => [name, policies.reduce((sum, policy, index) => sum + weights[index]! * policy[name], 0) / 4.5]),
    ) as KuhnPolicy
    expect(
      Math.abs(kuhnMatch(plain, kuhnConstantPolicy(0.5)).meanReward - weighted((policy) => kuhnMatch(policy, kuhnConstantPolicy(0.5)).meanReward)),
    ).toBeGreaterThan(1e-4)
    // One policy, or equal copies: itself. Two equilibria: an equilibrium.
    expect(kuhnAveragePolicy([policies[0]!])).toEqual(policies[0])
    expect(kuhnExploitability(kuhnAveragePolicy([kuhnNashPolicy(0), kuhnNashPolicy(1 / 3)])).exploitability).toBeCloseTo(0, 12)
    // A state no policy reaches ("0pb" when every policy bets its J): the weighted mean.
    const bettors = [
      { ...policies[0]!, '0': 1, '0pb': 0.2 },
      { ...policies[1]!, '0': 1, '0pb': 0.6 },
    ]
    expect(kuhnAveragePolicy(bettors)['0pb']).toBeCloseTo(0.4, 12)
  })

  it('refuse an empty list and bad weights by name', () => {
    const uniform = kuhnConstantPolicy(0.5)
    expect(() => kuhnAveragePolicy([])).toThrow(/policies/)
    expect(() => kuhnAveragePolicy([uniform], [1, 2])).toThrow(/weights/)
    expect(() => kuhnAveragePolicy([uniform, uniform], [1, -1])).toThrow(/weights\.1/)
    expect(() => kuhnAveragePolicy([uniform], [Number.NaN])).toThrow(InvalidArgumentError)
    expect(() => kuhnAveragePolicy([uniform], [0])).toThrow(/sum/)
    expect(() => kuhnAveragePolicy([{ ...uniform, '1': 2 }])).toThrow(/policies\.0/)
  })
})
