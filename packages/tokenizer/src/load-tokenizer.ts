import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { InvalidArgumentError, ParseError } from '@ludic/core'
import { type HubOptions, isRepoId, resolveModelSource } from '@ludic/hub'
import { Tokenizer } from './tokenizer.js'
import type { TokenizerLimitsOptions } from './tokenizer-limits.js'

/** A tokenizer given as parsed JSON: `tokenizer.json` and, optionally, `tokenizer_config.json`. */
export interface TokenizerFiles {
  tokenizer: unknown
  config?: unknown
}

async function readJson(path: string): Promise<unknown> {
  const text = await readFile(path, 'utf8')
  try {
    return JSON.parse(text) as unknown
  } catch (error) {
    throw new ParseError({ source: path, message: `not valid JSON (${error instanceof Error ? error.message : String(error)})`, cause: error })
  }
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile()
  } catch {
    return false
  }
}

/** Options of `loadTokenizer`. */
export interface LoadTokenizerOptions {
  /** Bounds on sizes, nesting and chat-template work (see `tokenizerLimitsSchema`); a field left out keeps its default. */
  limits?: TokenizerLimitsOptions
  /**
   * How a Hugging Face Hub repository id is fetched (`token`, `cacheDir`, `offline`, `endpoint`, `signal`,
   * `onProgress`…; see `@ludic/hub`'s `downloadRepo`). Default: from `HF_TOKEN`, `HF_HOME`, `HF_HUB_OFFLINE`…
   */
  hub?: HubOptions
}

/**
 * Loads a tokenizer from a model directory (with `tokenizer.json` and, if present,
 * `tokenizer_config.json`), from the path of a `tokenizer.json` (its directory's
 * `tokenizer_config.json` is read too), from a Hugging Face Hub repository id (`Qwen/Qwen3-0.6B`,
 * `owner/name@revision`: its tokenizer files are downloaded into the Hugging Face cache, or found there),
 * or from already parsed JSON. A local path wins over a repository id of the same name.
 */
export async function loadTokenizer(pathOrObject: string | TokenizerFiles, options: LoadTokenizerOptions = {}): Promise<Tokenizer> {
  const limits = options?.limits === undefined ? {} : { limits: options.limits }
  if (typeof pathOrObject === 'object' && pathOrObject !== null && 'tokenizer' in pathOrObject) {
    return Tokenizer.fromJSON(pathOrObject.tokenizer, pathOrObject.config, limits)
  }
  if (typeof pathOrObject !== 'string') {
    throw new InvalidArgumentError({ argument: 'pathOrObject', value: pathOrObject, message: 'must be a path or { tokenizer, config? }' })
  }
  if (isRepoId(pathOrObject)) return loadTokenizer(await resolveModelSource(pathOrObject, { ...options.hub, files: 'tokenizer' }), options)
  const directory = (await isFile(pathOrObject)) ? join(pathOrObject, '..') : pathOrObject
  const tokenizerPath = (await isFile(pathOrObject)) ? pathOrObject : join(directory, 'tokenizer.json')
  if (!(await isFile(tokenizerPath))) {
    throw new InvalidArgumentError({
      argument: 'pathOrObject',
      value: pathOrObject,
      message: `has no tokenizer.json (looked for ${tokenizerPath})`,
      cause: Object.assign(new Error(`no such file: ${tokenizerPath}`), { code: 'ENOENT' }), // a missing input, as the file system says it
    })
  }
  const configPath = join(directory, 'tokenizer_config.json')
  // Both reads start before either is awaited, and `Promise.all` handles both from the start: an `await` inside
  // its array would leave the first read's rejection unhandled while it waits (scripts/biome/no-await-in-promise-combinator.grit).
  const readConfig = async () => ((await isFile(configPath)) ? readJson(configPath) : undefined)
  const [tokenizer, config] = await Promise.all([readJson(tokenizerPath), readConfig()])
  return Tokenizer.fromJSON(tokenizer, config, { source: tokenizerPath, configSource: configPath, ...limits })
}
