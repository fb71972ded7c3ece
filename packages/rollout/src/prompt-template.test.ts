import { ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { defaultPromptTemplate, historyTurn, renderPrompt } from './prompt-template.js'

const view = { role: 'player0', observation: 'Your card is: K {role}', legalActions: ['[check]', '[bet]'] }
const context = { environmentId: 'kuhn-poker-v1', role: 'player0', turnIndex: 0, seed: 1 }

describe('renderPrompt', () => {
  it('renders string templates as one user message, replacing placeholders once', () => {
    expect(renderPrompt(defaultPromptTemplate, view, [], context)).toEqual([{ role: 'user', content: 'Your card is: K {role}' }])
    expect(renderPrompt('{role} sees: {observation}\nLegal: {legalActions}. {unknown}', view, [], context)).toEqual([
      { role: 'user', content: 'player0 sees: Your card is: K {role}\nLegal: [check], [bet]. {unknown}' },
    ])
    expect(renderPrompt('{legalActions}', { role: 'a', observation: '' }, [], context)[0]?.content).toBe('')
  })

  it('calls prompt functions and checks what they return', () => {
    const messages = renderPrompt(
      (v, history, c) => [
        { role: 'system', content: c.environmentId },
        { role: 'user', content: `${v.observation} after ${history.length}` },
      ],
      view,
      [],
      context,
    )
    expect(messages).toEqual([
      { role: 'system', content: 'kuhn-poker-v1' },
      { role: 'user', content: 'Your card is: K {role} after 0' },
    ])
    expect(() => renderPrompt(() => [], view, [], context)).toThrow(ParseError)
    expect(() => renderPrompt(() => [{ role: 'narrator', content: 'x' }] as never, view, [], context)).toThrow(/prompt function at \[0\]\.role/)
  })
})

describe('historyTurn', () => {
  it('records the turn as collect does: the view it acted on (legal actions and state key when given), the action, the rewards, invalid or not', () => {
    const outcome = { done: false, truncated: false, rewards: { player0: 0, player1: 0 }, info: {} }
    expect(historyTurn(3, { ...view, stateKey: 'K' }, '[bet]', outcome)).toEqual({
      index: 3,
      role: 'player0',
      observation: 'Your card is: K {role}',
      legalActions: ['[check]', '[bet]'],
      stateKey: 'K',
      action: '[bet]',
      rewards: { player0: 0, player1: 0 },
      invalidAction: false,
    })
    const refused = historyTurn(0, { role: 'player1', observation: 'o' }, 'x', { ...outcome, info: { invalidAction: true } })
    expect(refused).toEqual({ index: 0, role: 'player1', observation: 'o', action: 'x', rewards: { player0: 0, player1: 0 }, invalidAction: true })
  })
})
