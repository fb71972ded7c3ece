import { readFileSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { getHFHubCachePath } from '@huggingface/hub'
import { ParseError } from '@ludic/core'

/**
 * The environment variables Python's `huggingface_hub` reads, read the same way, so that Ludic and Python
 * share one cache, one token and one offline switch.
 */

/** The Hub's address. */
export const defaultEndpoint = 'https://huggingface.co'

/** Values Python's `huggingface_hub` takes as true (`_is_true`), compared case-insensitively. */
const trueValues = new Set(['1', 'ON', 'YES', 'TRUE'])

/** Python's `_is_true`: `1`, `on`, `yes`, `true` in any case. */
export function isTrueEnvironmentValue(value: string | undefined): boolean {
  return value !== undefined && trueValues.has(value.toUpperCase())
}

function expandHome(path: string): string {
  return path === '~' || path.startsWith('~/') ? join(homedir(), path.slice(1)) : path
}

/** `HF_HOME`, else `$XDG_CACHE_HOME/huggingface`, else `~/.cache/huggingface`. */
export function huggingFaceHome(): string {
  return expandHome(process.env.HF_HOME ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'huggingface'))
}

/** `HF_HUB_CACHE`, else `HUGGINGFACE_HUB_CACHE`, else `$HF_HOME/hub` (the rules of `@huggingface/hub`'s `getHFHubCachePath`, which are Python's). */
export function defaultCacheDir(): string {
  return expandHome(getHFHubCachePath())
}

/** Whether `HF_HUB_OFFLINE` (or transformers' `TRANSFORMERS_OFFLINE`) is true. */
export function defaultOffline(): boolean {
  return isTrueEnvironmentValue(process.env.HF_HUB_OFFLINE) || isTrueEnvironmentValue(process.env.TRANSFORMERS_OFFLINE)
}

/** `HF_ENDPOINT` without its trailing `/`, else `https://huggingface.co`. */
export function defaultEndpointUrl(): string {
  const endpoint = process.env.HF_ENDPOINT
  return endpoint === undefined || endpoint === '' ? defaultEndpoint : endpoint.replace(/\/+$/, '')
}

/** Python's `_clean_token`: line breaks removed, surrounding blanks trimmed, empty means none. */
function cleanToken(token: string | undefined): string | undefined {
  const cleaned = token?.replace(/[\r\n]/g, '').trim()
  return cleaned === undefined || cleaned === '' ? undefined : cleaned
}

const maxTokenFileBytes = 4096

/**
 * The token Python's `huggingface_hub` would send: `HF_TOKEN`, else `HUGGING_FACE_HUB_TOKEN`, else the file
 * `HF_TOKEN_PATH` (default `$HF_HOME/token`, written by `hf auth login`); `undefined` when there is none.
 */
export function defaultToken(): string | undefined {
  const fromEnvironment = cleanToken(process.env.HF_TOKEN) ?? cleanToken(process.env.HUGGING_FACE_HUB_TOKEN)
  if (fromEnvironment !== undefined) return fromEnvironment
  const path = expandHome(process.env.HF_TOKEN_PATH ?? join(huggingFaceHome(), 'token'))
  let size: number
  try {
    const stats = statSync(path)
    if (!stats.isFile()) return undefined
    size = stats.size
  } catch {
    return undefined
  }
  if (size > maxTokenFileBytes)
    throw new ParseError({ source: path, message: `is ${size} bytes; a token file holds one token (at most ${maxTokenFileBytes} bytes)` })
  return cleanToken(readFileSync(path, 'utf8'))
}
