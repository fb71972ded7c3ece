import { mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { loadTokenizer, trainBpe, type TrainBpeOptions } from '@ludic/tokenizer'
import { CliError, exitCodes } from '../errors.js'
import { type CommandContext, commandContext, log } from '../context.js'

export interface TokenizerTrainOptions {
  /** Text files; each line is one text of the corpus. */
  input: readonly string[]
  vocabSize: number
  /** Where `tokenizer.json` and `tokenizer_config.json` go (made if missing). */
  out: string
  /** `gpt2`, `llama3` (default), `qwen2`, `gpt4o`, or an Oniguruma regex. */
  pattern?: string
  /** Special tokens (the first ids). Default: `eos`, when given. */
  specialTokens?: readonly string[]
  /** The end-of-sequence token (added as a special token). Default: none. */
  eos?: string
  /** A file with a Jinja chat template for `tokenizer_config.json`. */
  chatTemplate?: string
  /** A pair must occur this often to be merged. Default 2. */
  minFrequency?: number
  /** The largest input read, in bytes, all files together. Default 512 MiB. */
  maxInputBytes?: number
}

export interface TokenizerTrainSummary {
  directory: string
  vocabSize: number
  merges: number
  texts: number
  inputBytes: number
  seconds: number
}

const namedPatterns = ['gpt2', 'llama3', 'qwen2', 'gpt4o'] as const

/**
 * `ludic tokenizer train`: a byte-level BPE (`trainBpe` of `@ludic/tokenizer`) on the lines of the input files,
 * written as `tokenizer.json` and `tokenizer_config.json` (EOS, chat template), which `loadTokenizer` reads back.
 */
export async function tokenizerTrain(options: TokenizerTrainOptions, partialContext: Partial<CommandContext> = {}): Promise<TokenizerTrainSummary> {
  const context = commandContext(partialContext)
  const started = performance.now()
  if (options.input.length === 0) throw new CliError('--input needs at least one file', exitCodes.usage)
  const maxInputBytes = options.maxInputBytes ?? 512 * 2 ** 20
  const files = options.input.map((file) => resolve(context.cwd, file))
  let inputBytes = 0
  for (const file of files) inputBytes += (await stat(file)).size // a missing file: ENOENT, exit code 3
  if (inputBytes > maxInputBytes) throw new CliError(`the input is ${inputBytes} bytes, more than --max-input-bytes ${maxInputBytes}`, exitCodes.usage)
  const texts: string[] = []
  for (const file of files) for (const line of (await readFile(file, 'utf8')).split(/\r?\n/)) if (line.trim() !== '') texts.push(line)
  const specialTokens = [...(options.specialTokens ?? [])]
  if (options.eos !== undefined && !specialTokens.includes(options.eos)) specialTokens.push(options.eos)
  const pattern = options.pattern ?? 'llama3'
  const trainOptions: TrainBpeOptions = {
    vocabSize: options.vocabSize,
    specialTokens,
    preTokenizer: (namedPatterns as readonly string[]).includes(pattern) ? (pattern as (typeof namedPatterns)[number]) : { pattern },
    ...(options.minFrequency === undefined ? {} : { minFrequency: options.minFrequency }),
  }
  log(context, `training a ${options.vocabSize}-token BPE on ${texts.length} lines (${inputBytes} bytes)`)
  const json = trainBpe(texts, trainOptions)
  const config: Record<string, unknown> = { tokenizer_class: 'PreTrainedTokenizerFast' }
  if (options.eos !== undefined) config.eos_token = options.eos
  if (options.chatTemplate !== undefined) config.chat_template = await readFile(resolve(context.cwd, options.chatTemplate), 'utf8')
  const directory = resolve(context.cwd, options.out)
  await mkdir(directory, { recursive: true })
  await writeFile(join(directory, 'tokenizer.json'), `${JSON.stringify(json)}\n`)
  await writeFile(join(directory, 'tokenizer_config.json'), `${JSON.stringify(config, null, 2)}\n`)
  const tokenizer = await loadTokenizer(directory) // what was written reads back
  return {
    directory,
    vocabSize: tokenizer.vocabSize,
    merges: json.model.merges.length,
    texts: texts.length,
    inputBytes,
    seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
  }
}
