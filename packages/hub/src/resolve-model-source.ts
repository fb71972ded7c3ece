import { existsSync } from 'node:fs'
import { InvalidArgumentError } from '@ludic/core'
import { type DownloadRepoOptions, downloadRepo } from './download-repo.js'
import { parseRepoReference } from './repo-id.js'

/**
 * Where a model (or tokenizer) is on this machine: a local path (file or folder) is returned as it is; a Hub
 * repository id (`owner/name`, or `owner/name@revision`) is downloaded with `downloadRepo` (or found in the
 * cache) and its snapshot folder returned. A local path of the same name wins over the repository.
 */
export async function resolveModelSource(pathOrRepoId: string, options: DownloadRepoOptions = {}): Promise<string> {
  if (typeof pathOrRepoId !== 'string' || pathOrRepoId.length === 0) {
    throw new InvalidArgumentError({
      argument: 'pathOrRepoId',
      value: pathOrRepoId,
      message: 'must be a local path or a Hub repository id (owner/name[@revision])',
    })
  }
  if (existsSync(pathOrRepoId)) return pathOrRepoId
  if (parseRepoReference(pathOrRepoId) === undefined) {
    throw new InvalidArgumentError({
      argument: 'pathOrRepoId',
      value: pathOrRepoId,
      message: 'no such file or directory, and not a Hub repository id (owner/name or owner/name@revision)',
    })
  }
  return downloadRepo(pathOrRepoId, options)
}
