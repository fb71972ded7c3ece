import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { kuhnConstantPolicy, kuhnInformationStateNames, kuhnNashPolicy, parseKuhnPolicy } from './kuhn-policy.js'

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
})
