import { expect, it } from 'vitest'
import { main } from './main.js'

it('the tokenizer example encodes, renders the chat template and streams whole characters', async () => {
  const output: string[] = []
  const { ids, prompt, streamed } = await main((text) => output.push(text))
  expect(Array.from(ids)).toEqual([9707, 1879, 0]) // Qwen3's ids for 'Hello world!'
  expect(prompt).toBe('<|im_start|>user\nYour card is K. Bet or check?<|im_end|>\n<|im_start|>assistant\n')
  expect(streamed).toBe('😀 streamed, 你好')
  expect(output.join('')).toContain('ids: [9707, 1879, 0] → "Hello world!"')
})
