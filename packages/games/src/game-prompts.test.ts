import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { gamePrompts, observationFromMessages, renderGamePrompt } from './game-prompts.js'

describe('renderGamePrompt', () => {
  const view = { role: 'player0', observation: 'Your card is: K\nYour available actions are: [check], [bet]' }

  it("wraps the observation in SPIRAL's prompt", () => {
    expect(renderGamePrompt(view, 'spiral')).toEqual([
      {
        role: 'user',
        content:
          'You are playing a two-player zero-sum game. Make valid actions to win.\n' +
          'Observation: Your card is: K\nYour available actions are: [check], [bet]\n' +
          'Please reason step by step, and put your final answer within \\boxed{}.',
      },
    ])
  })

  it('gives the bare observation with the terse prompt, keeping $ sequences literal', () => {
    expect(renderGamePrompt(view, 'terse')).toEqual([{ role: 'user', content: view.observation }])
    expect(renderGamePrompt('cost: $& and $1 {observation}', 'terse')).toEqual([{ role: 'user', content: 'cost: $& and $1 {observation}' }])
  })

  it("is a rollout PromptTemplate string: only the {observation} placeholder, rollout's default for terse", () => {
    for (const template of Object.values(gamePrompts)) expect(template.match(/\{(\w+)\}/g)).toEqual(['{observation}'])
    expect(gamePrompts.terse).toBe('{observation}')
  })

  it('rejects unknown names, listing the known ones', () => {
    expect(() => renderGamePrompt(view, 'chatty' as 'terse')).toThrow(InvalidArgumentError)
    expect(() => renderGamePrompt(view, 'toString' as 'terse')).toThrow(/'name'.*is not one of spiral, terse/)
  })
})

describe('observationFromMessages', () => {
  it('recovers the observation from either prompt', () => {
    const observation = 'Current Board:\n\n 0 | 1 | 2 '
    expect(observationFromMessages(renderGamePrompt(observation, 'spiral'))).toBe(observation)
    expect(observationFromMessages(renderGamePrompt(observation, 'terse'))).toBe(observation)
  })

  it('reads the last user message', () => {
    const messages = [
      { role: 'user' as const, content: 'first' },
      { role: 'assistant' as const, content: '[bet]' },
      { role: 'user' as const, content: 'second' },
      { role: 'assistant' as const, content: 'thinking' },
    ]
    expect(observationFromMessages(messages)).toBe('second')
    expect(() => observationFromMessages([{ role: 'system', content: 'x' }])).toThrow(/no user message/)
  })
})
