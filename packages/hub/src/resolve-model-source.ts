import { existsSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { dirname, isAbsolute, resolve } from 'node:path'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { z } from 'zod'
import { type DownloadRepoOptions, downloadRepo, downloadRepoOptionsSchema } from './download-repo.js'
import { HubError } from './hub-error.js'
import { parseRepoReference } from './repo-id.js'

export const resolveModelSourceOptionsSchema = downloadRepoOptionsSchema.extend({
  /** The folder a relative local path is looked for in. Default: the working directory. */
  base: z.string().min(1).optional(),
})
export type ResolveModelSourceOptions = DownloadRepoOptions & { base?: string }

/** The nearest folder above `path` that exists, and up to 8 of its entries: what a typo most likely meant. */
async function nearestExisting(path: string): Promise<string> {
  let folder = dirname(path)
  while (!existsSync(folder) && dirname(folder) !== folder) folder = dirname(folder)
  const entries = await readdir(folder).catch(() => [] as string[])
  const shown = entries.filter((entry) => !entry.startsWith('.')).slice(0, 8)
  return shown.length === 0 ? '' : ` (${folder} holds ${shown.join(', ')}${entries.length > shown.length ? ', …' : ''})`
}

/**
 * Where a model (or tokenizer) is on this machine: a local path (file or folder, relative to `base`) is returned
 * as it is; a Hub repository id (`owner/name`, or `owner/name@revision`) is downloaded with `downloadRepo` (or
 * found in the cache) and its snapshot folder returned. A local path of the same name wins over the repository.
 *
 * What is found neither way is a `HubError` with reason `missing` that says both what was looked for locally
 * (the absolute path, and what its nearest existing folder holds: `runs/model` is often a typo of a run folder)
 * and what the Hub answered: no such repository, no network (the Hub could not be reached, e.g. offline), or
 * `HF_HUB_OFFLINE` with a cache that lacks it. The Hub's own error is the `cause`. A gated or private repository,
 * a refused token or a corrupt download are the Hub's errors as they are (the repository exists).
 */
export async function resolveModelSource(pathOrRepoId: string, options: ResolveModelSourceOptions = {}): Promise<string> {
  if (typeof pathOrRepoId !== 'string' || pathOrRepoId.length === 0) {
    throw new InvalidArgumentError({
      argument: 'pathOrRepoId',
      value: pathOrRepoId,
      message: 'must be a local path or a Hub repository id (owner/name[@revision])',
    })
  }
  const { base, ...hubOptions } = parseArgument(resolveModelSourceOptionsSchema, options, 'options')
  const local = resolve(base ?? process.cwd(), pathOrRepoId)
  if (existsSync(local)) return isAbsolute(pathOrRepoId) || base !== undefined ? local : pathOrRepoId
  const reference = parseRepoReference(pathOrRepoId)
  if (reference === undefined) {
    throw new InvalidArgumentError({
      argument: 'pathOrRepoId',
      value: pathOrRepoId,
      message: `no such file or directory (${local})${await nearestExisting(local)}, and not a Hub repository id (owner/name or owner/name@revision)`,
    })
  }
  try {
    return await downloadRepo(pathOrRepoId, hubOptions)
  } catch (error) {
    if (!HubError.isInstance(error) || !['missing', 'network', 'offline'].includes(error.reason)) throw error
    // A file the repository lacks (its weights, its config) is the repository's problem, not a missing source.
    if (error.reason === 'missing' && error.file !== undefined) throw error
    const hub =
      error.reason === 'missing'
        ? `the Hub has no repository ${reference.repoId}${reference.revision === undefined ? '' : ` at '${reference.revision}'`}`
        : error.reason === 'offline'
          ? 'the Hub cache has no copy of a repository of that name, and the Hub was not asked (offline)'
          : 'the Hub could not say whether a repository of that name exists'
    throw new HubError({
      reason: 'missing',
      repoId: reference.repoId,
      ...(error.revision === undefined ? {} : { revision: error.revision }),
      ...(error.status === undefined ? {} : { status: error.status }),
      message: `No model at '${pathOrRepoId}': tried the local path ${local}, which does not exist${await nearestExisting(local)}, then the Hugging Face Hub: ${hub} (${error.message})`,
      cause: error,
    })
  }
}
