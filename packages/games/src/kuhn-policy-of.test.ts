import { InvalidArgumentError, type ChatMessage } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { kuhnExploitability } from './kuhn-exploitability.js'
import { kuhnInformationStateOf } from './kuhn-information-states.js'
import { kuhnPolicyOf } from './kuhn-policy-of.js'
import { kuhnNashPolicy, type KuhnPolicy } from './kuhn-policy.js'
import { gamePrompts, observationFromMessages } from './game-prompts.js'

/** A scorer for a model that plays `policy` exactly: log-probabilities of the two actions at the state it reads. */
const scorerOf =
  (policy: KuhnPolicy, seen: (string | readonly ChatMessage[])[] = []) =>
  async (prompt: string | readonly ChatMessage[], actions: readonly string[]) => {
    seen.push(prompt)
    const observation = typeof prompt === 'string' ? prompt : observationFromMessages(prompt)
    const aggressive = policy[kuhnInformationStateOf(observation)]
    expect(actions).toHaveLength(2)
    return [Math.log(1 - aggressive), Math.log(aggressive)]
  }

describe('kuhnPolicyOf', () => {
  it("recovers a model's tabular policy exactly, probabilities 0 and 1 included", async () => {
    const nash = kuhnNashPolicy(1 / 6)
    const policy = await kuhnPolicyOf(scorerOf(nash))
    for (const [name, probability] of Object.entries(nash)) expect(policy[name as keyof KuhnPolicy]).toBeCloseTo(probability, 12)
    expect(kuhnExploitability(policy).exploitability).toBeCloseTo(0, 10)
  })

  it('normalises log-scores with a softmax over the legal actions', async () => {
    const policy = await kuhnPolicyOf(() => [-7.25, -7.25])
    expect(Object.values(policy).every((probability) => probability === 0.5)).toBe(true)
    expect(kuhnExploitability(policy).exploitability).toBeCloseTo(11 / 24, 12)
    const skewed = await kuhnPolicyOf(() => [-1000, -1000 + Math.log(3)]) // odds 3:1 for the aggressive action
    expect(skewed['1']).toBeCloseTo(0.75, 12)
  })

  it("scores SPIRAL's chat prompt by default, the bare observation or another template on request", async () => {
    const seen: (string | readonly ChatMessage[])[] = []
    await kuhnPolicyOf(scorerOf(kuhnNashPolicy(0), seen))
    expect(seen).toHaveLength(12)
    expect((seen[0] as ChatMessage[])[0]!.content.startsWith(gamePrompts.spiral.split('{observation}')[0]!)).toBe(true)
    seen.length = 0
    await kuhnPolicyOf(scorerOf(kuhnNashPolicy(0), seen), { prompt: 'observation', environment: { rounds: 1 } })
    expect(typeof seen[0]).toBe('string')
    expect(seen[0]).toContain('in a 1 round game of Kuhn Poker')
  })

  it('rejects scores of the wrong shape', async () => {
    await expect(kuhnPolicyOf(() => [0])).rejects.toThrow(InvalidArgumentError)
    await expect(kuhnPolicyOf(() => [0, Number.NaN])).rejects.toThrow(/information state 0/)
    await expect(kuhnPolicyOf(() => [-Infinity, -Infinity])).rejects.toThrow(/probability 0/)
  })
})
