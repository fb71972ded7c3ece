import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { type DownloadProgress, parseRepoReference, resolveModelSource } from '@ludic/hub'
import { CliError, exitCodes } from './errors.js'

/**
 * The local directory of a model given as a path (relative to `base`) or a Hugging Face repo id (`owner/name`,
 * `owner/name@revision`), downloaded into the Hub cache when not there. A path that exists wins over a repo of the
 * same name; neither is exit code 3: a `CliError` for a path that cannot be a repo id, else `resolveModelSource`'s
 * `missing` `HubError`, which says what was tried (the local path, then the Hub) and what the Hub answered.
 */
export async function localModelDirectory(
  text: string,
  options: { base: string; signal?: AbortSignal; onProgress?: (event: DownloadProgress) => void },
): Promise<string> {
  const local = resolve(options.base, text)
  if (existsSync(local)) return local
  if (parseRepoReference(text) !== undefined)
    return resolveModelSource(text, {
      base: options.base,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
    })
  throw new CliError(`no such file or directory (${local}), and not a Hugging Face repo id (owner/name): ${text}`, exitCodes.notFound)
}

/**
 * A model folder holds `config.json` (and the weights and the tokenizer beside it): a folder without one, e.g. a run
 * directory rather than its `model/`, is a `CliError` with exit code 3 that says what a model folder is.
 */
export function checkModelFolder(directory: string, text: string): void {
  if (!existsSync(join(directory, 'config.json')))
    throw new CliError(
      `${text} is not a model folder: it has no config.json (a model folder holds config.json, model.safetensors and tokenizer.json, as \`ludic train\` writes into <run directory>/model)`,
      exitCodes.notFound,
    )
}
