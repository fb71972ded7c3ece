import { describe, expect, it } from 'vitest'
import { chatCompletionRequestSchema, messageText, tokenIdsFromText, toChatMessages } from './openai-protocol.js'

describe('OpenAI protocol helpers', () => {
  it('reads message contents and maps developer to system', () => {
    expect(messageText('hi')).toBe('hi')
    expect(messageText([{ text: 'a' }, { text: 'b' }])).toBe('a\nb')
    expect(messageText(null)).toBe('')
    const body = chatCompletionRequestSchema.parse({
      model: 'm',
      messages: [
        { role: 'developer', content: 'rules' },
        { role: 'assistant', content: null },
        { role: 'user', content: 'x', name: 'bob' },
      ],
      extra_field: 1,
    })
    expect(toChatMessages(body.messages)).toEqual([
      { role: 'system', content: 'rules' },
      { role: 'assistant', content: '' },
      { role: 'user', content: 'x', name: 'bob' },
    ])
  })

  it('reads token ids back from token_id:<id> strings only when every token has that form', () => {
    expect(tokenIdsFromText(['token_id:5', 'token_id:0'])).toEqual([5, 0])
    expect(tokenIdsFromText(['token_id:5', 'x'])).toBeUndefined()
    expect(tokenIdsFromText([])).toEqual([])
    expect(tokenIdsFromText(['token_id:-5', 'token_id:1000000000000'])).toEqual([-5, 1e12]) // not wrapped: the caller refuses them
  })
})
