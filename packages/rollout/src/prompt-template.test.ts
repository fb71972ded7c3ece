import { ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { defaultPromptTemplate, renderPrompt } from './prompt-template.js'

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
