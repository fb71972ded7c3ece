import { InvalidArgumentError, isResponseTooLarge, limitResponseBody, ParseError, parseArgument } from '@ludic/core'
import { z } from 'zod'
import { Tokenizer } from './tokenizer.js'
import type { TokenizerLimitsOptions } from './tokenizer-limits.js'

const urlSchema = z.union([z.string().min(1), z.instanceof(URL)])

export const loadTokenizerFromUrlOptionsSchema = z.strictObject({
  /**
   * Where `tokenizer_config.json` is: a URL, or `false` for none. Default: beside `tokenizer.json` (the same folder),
   * and none when that answers 404.
   */
  configUrl: z.union([urlSchema, z.literal(false)]).optional(),
  /** The largest body read, per file, in bytes; a larger one is refused as it arrives. Default 64 MiB (Qwen3's is 11 MB). */
  maxBytes: z
    .number()
    .int()
    .positive()
    .max(2 ** 31 - 1)
    .default(64 * 1024 * 1024),
  /** Bounds on sizes, nesting and chat-template work, as `Tokenizer.fromJSON` takes them. */
  limits: z.custom<TokenizerLimitsOptions>((value) => typeof value === 'object' && value !== null, 'must be tokenizer limits').optional(),
  /** The fetch to use. Default: the global one. */
  fetch: z.custom<typeof fetch>((value) => typeof value === 'function', 'must be a fetch function').optional(),
  signal: z.custom<AbortSignal>((value) => value instanceof AbortSignal, 'must be an AbortSignal').optional(),
})
export type LoadTokenizerFromUrlOptions = z.input<typeof loadTokenizerFromUrlOptionsSchema>

/**
 * A tokenizer from a URL (a web page's own files, a Hub `resolve/main/tokenizer.json`…), in a browser or in Node: `url`
 * names `tokenizer.json`; `tokenizer_config.json` is read beside it (`configUrl` to say where, `false` for none).
 * Each body is bounded by `maxBytes` before it is read whole; an answer that is not 2xx, a body over the bound and
 * JSON that does not parse are `ParseError`s naming the URL. `loadTokenizer` reads files and the Hub cache in Node.
 */
export async function loadTokenizerFromUrl(url: string | URL, options: LoadTokenizerFromUrlOptions = {}): Promise<Tokenizer> {
  const location = parseUrl(url, 'url')
  const { configUrl, maxBytes, limits, fetch: fetchOption, signal } = parseArgument(loadTokenizerFromUrlOptionsSchema, options, 'options')
  const fetchFunction = fetchOption ?? globalThis.fetch
  const configLocation =
    configUrl === false ? undefined : configUrl === undefined ? new URL('tokenizer_config.json', location) : parseUrl(configUrl, 'options.configUrl')
  const read = (target: URL, optional: boolean) => readJson(fetchFunction, target, { maxBytes, optional, ...(signal === undefined ? {} : { signal }) })
  // Both requests start before either is awaited (a rejection of the second is handled from the start).
  const [tokenizer, config] = await Promise.all([
    read(location, false),
    configLocation === undefined ? undefined : read(configLocation, configUrl === undefined),
  ])
  return Tokenizer.fromJSON(tokenizer, config, {
    source: location.href,
    ...(configLocation === undefined ? {} : { configSource: configLocation.href }),
    ...(limits === undefined ? {} : { limits }),
  })
}

function parseUrl(value: unknown, argument: string): URL {
  const parsed = parseArgument(urlSchema, value, argument)
  try {
    // Relative to the page in a browser; Node has no base, so a relative URL is refused there.
    return new URL(parsed, (globalThis as { location?: { href: string } }).location?.href)
  } catch (error) {
    throw new InvalidArgumentError({ argument, value, message: 'is not a URL', cause: error })
  }
}

async function readJson(fetchFunction: typeof fetch, url: URL, options: { maxBytes: number; optional: boolean; signal?: AbortSignal }): Promise<unknown> {
  const response = await fetchFunction(url, options.signal === undefined ? {} : { signal: options.signal })
  if (options.optional && response.status === 404) {
    await response.body?.cancel()
    return undefined
  }
  if (!response.ok) {
    await response.body?.cancel()
    throw new ParseError({ source: url.href, message: `answered ${response.status} ${response.statusText}`.trim() })
  }
  let text: string
  try {
    text = await limitResponseBody(response, options.maxBytes, 'maxBytes').text()
  } catch (error) {
    if (isResponseTooLarge(error)) {
      throw new ParseError({ source: url.href, message: `is larger than maxBytes (${options.maxBytes} bytes)`, cause: error })
    }
    throw error
  }
  try {
    return JSON.parse(text) as unknown
  } catch (error) {
    throw new ParseError({ source: url.href, message: `not valid JSON (${error instanceof Error ? error.message : String(error)})`, cause: error })
  }
}
