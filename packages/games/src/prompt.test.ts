import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { observationFromMessages, renderPrompt } from './prompt.js'

describe('renderPrompt', () => {
  const view = { role: 'player0', observation: 'Your card is: K\nYour available actions are: [check], [bet]' }

  it("wraps the observation in SPIRAL's prompt by default", () => {
    expect(renderPrompt(view)).toEqual([
      {
        role: 'user',
        content:
          'You are playing a two-player zero-sum game. Make valid actions to win.\n' +
          'Observation: Your card is: K\nYour available actions are: [check], [bet]\n' +
          'Please reason step by step, and put your final answer within \\boxed{}.',
      },
    ])
  })

  it('gives the bare observation with the terse template', () => {
    expect(renderPrompt(view, 'terse')).toEqual([{ role: 'user', content: view.observation }])
  })

  it('takes custom templates with a system message, keeping $ sequences literal', () => {
    const messages = renderPrompt('cost: $& and $1', { name: 'mine', system: 'Play well.', user: 'Game:\n{observation}\nMove?' })
    expect(messages).toEqual([
      { role: 'system', content: 'Play well.' },
      { role: 'user', content: 'Game:\ncost: $& and $1\nMove?' },
    ])
  })

  it('rejects unknown names and templates without {observation}', () => {
    expect(() => renderPrompt(view, 'chatty' as 'terse')).toThrow(InvalidArgumentError)
    expect(() => renderPrompt(view, { name: 'bad', user: 'no placeholder' })).toThrow(/template\.user/)
  })
})

describe('observationFromMessages', () => {
  it('recovers the observation from either template', () => {
    const observation = 'Current Board:\n\n 0 | 1 | 2 '
    expect(observationFromMessages(renderPrompt(observation, 'spiral'))).toBe(observation)
    expect(observationFromMessages(renderPrompt(observation, 'terse'))).toBe(observation)
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
