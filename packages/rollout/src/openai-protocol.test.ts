import { describe, expect, it } from 'vitest'
import { chatCompletionRequestSchema, completionRequestSchema, messageText, tokenIdsFromText, toChatMessages } from './openai-protocol.js'

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

  it("parses vLLM's min_tokens (an integer ≥ 0) and ignore_eos (a boolean) on both endpoints", () => {
    const chat = { model: 'm', messages: [{ role: 'user', content: 'x' }] }
    expect(chatCompletionRequestSchema.parse({ ...chat, min_tokens: 3, ignore_eos: true })).toMatchObject({ min_tokens: 3, ignore_eos: true })
    expect(completionRequestSchema.parse({ model: 'm', prompt: 'x', min_tokens: 0, ignore_eos: false })).toMatchObject({ min_tokens: 0, ignore_eos: false })
    expect(chatCompletionRequestSchema.parse({ ...chat, min_tokens: null, ignore_eos: null })).toMatchObject({ min_tokens: null, ignore_eos: null })
    for (const bad of [{ min_tokens: -1 }, { min_tokens: 1.5 }, { min_tokens: '3' }, { ignore_eos: 'yes' }, { ignore_eos: 1 }]) {
      const issue = chatCompletionRequestSchema.safeParse({ ...chat, ...bad }).error?.issues[0]
      expect(issue?.path).toEqual(Object.keys(bad))
      expect(completionRequestSchema.safeParse({ model: 'm', prompt: 'x', ...bad }).error?.issues[0]?.path).toEqual(Object.keys(bad))
    }
  })

  it('reads token ids back from token_id:<id> strings only when every token has that form', () => {
    expect(tokenIdsFromText(['token_id:5', 'token_id:0'])).toEqual([5, 0])
    expect(tokenIdsFromText(['token_id:5', 'x'])).toBeUndefined()
    expect(tokenIdsFromText([])).toEqual([])
    expect(tokenIdsFromText(['token_id:-5', 'token_id:1000000000000'])).toEqual([-5, 1e12]) // not wrapped: the caller refuses them
  })
})
