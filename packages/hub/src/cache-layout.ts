import { randomBytes } from 'node:crypto'
import { copyFile, lstat, mkdir, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { basename, dirname, join, relative } from 'node:path'
import { getRepoFolderName } from '@huggingface/hub'
import { FileSystemError } from '@ludic/core'

/**
 * The cache layout Python's `huggingface_hub` writes (and reads), one folder per repository:
 *
 * ```
 * <cache>/models--owner--name/
 *   blobs/<etag>                        file contents, named by the Hub's ETag (SHA-256 for LFS files, git SHA-1 otherwise)
 *   blobs/<etag>.incomplete             a download in progress (Ludic resumes it with an HTTP Range request)
 *   snapshots/<commit>/<file>           relative symbolic link to ../../blobs/<etag> (a copy where links are not allowed)
 *   refs/<revision>                     the commit hash a branch or tag pointed to when last resolved
 *   .no_exist/<commit>/<file>           empty file: the Hub has no such file at that commit
 *   <cache>/CACHEDIR.TAG                marks the folder as a cache for backup tools (https://bford.info/cachedir/)
 *   <cache>/.locks/models--owner--name/<etag>.lock   the lock a download of the blob holds (Python's `filelock`, BSD flock)
 * ```
 *
 * Every write names its file when the file system refuses it (a full disk): a `FileSystemError`.
 */

/** A full commit hash: 40 lowercase hexadecimal digits. */
export const commitHashPattern = /^[0-9a-f]{40}$/

/** `<cacheDir>/models--owner--name`. */
export function repoStorageFolder(cacheDir: string, repoId: string): string {
  return join(cacheDir, getRepoFolderName({ type: 'model', name: repoId }))
}

export function snapshotFolder(storage: string, commit: string): string {
  return join(storage, 'snapshots', commit)
}

export function blobPath(storage: string, etag: string): string {
  return join(storage, 'blobs', etag)
}

/** `<cache>/.locks/models--owner--name/<etag>.lock`: the file Python's `huggingface_hub` locks while it downloads the blob. */
export function blobLockPath(storage: string, etag: string): string {
  return join(dirname(storage), '.locks', basename(storage), `${etag}.lock`)
}

/** `writeFile`, whose failure (a full disk: Node's error names no file) is a `FileSystemError` naming `path`. */
async function writeNamedFile(path: string, data: string, flag?: string): Promise<void> {
  try {
    await writeFile(path, data, flag === undefined ? {} : { flag })
  } catch (error) {
    throw FileSystemError.wrap(error, path, 'write')
  }
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile()
  } catch {
    return false
  }
}

/** Whether the snapshot of `commit` holds `file` (a link whose blob exists, or a copy). */
export function snapshotHasFile(storage: string, commit: string, file: string): Promise<boolean> {
  return isFile(join(snapshotFolder(storage, commit), file))
}

/** Whether the cache records that the Hub has no `file` at `commit`. */
export function isMarkedMissing(storage: string, commit: string, file: string): Promise<boolean> {
  return isFile(join(storage, '.no_exist', commit, file))
}

/** Records that the Hub has no `file` at `commit`, as Python does after a 404 `EntryNotFound`. */
export async function markMissing(storage: string, commit: string, file: string): Promise<void> {
  const path = join(storage, '.no_exist', commit, file)
  await mkdir(dirname(path), { recursive: true })
  await writeNamedFile(path, '')
}

/** The commit `refs/<revision>` holds; `undefined` when there is none or it is not a commit hash. */
export async function readRef(storage: string, revision: string): Promise<string | undefined> {
  try {
    const commit = (await readFile(join(storage, 'refs', revision), 'utf8')).trim()
    return commitHashPattern.test(commit) ? commit : undefined
  } catch {
    return undefined
  }
}

const cacheDirTag =
  'Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by Ludic (@ludic/hub), as huggingface_hub creates it.\n# For information about cache directory tags, see:\n#\thttps://bford.info/cachedir/\n'

/** Writes `<cacheDir>/CACHEDIR.TAG` unless there is one (Python's `huggingface_hub` writes the same tag). */
export async function tagCacheDir(cacheDir: string): Promise<void> {
  await mkdir(cacheDir, { recursive: true })
  try {
    await writeFile(join(cacheDir, 'CACHEDIR.TAG'), cacheDirTag, { flag: 'wx' })
  } catch {
    // already tagged, or not writable: the tag is a courtesy
  }
}

/** Writes `refs/<revision>` (no newline, as Python writes it) through a temporary file and a rename, so readers never see half of it. */
export async function writeRef(storage: string, revision: string, commit: string): Promise<void> {
  if (revision === commit || (await readRef(storage, revision)) === commit) return
  const path = join(storage, 'refs', revision)
  await mkdir(dirname(path), { recursive: true })
  const temporary = `${path}.${randomBytes(4).toString('hex')}.tmp`
  try {
    await writeFile(temporary, commit)
    await rename(temporary, path)
  } catch (error) {
    await rm(temporary, { force: true })
    throw FileSystemError.wrap(error, path, 'write')
  }
}

/**
 * Points `snapshots/<commit>/<file>` at `blobs/<etag>` with a relative symbolic link (so the cache can be
 * moved), replacing what was there; copies the blob where symbolic links cannot be made (Windows without
 * developer mode), as Python does.
 */
export async function linkSnapshotFile(storage: string, commit: string, file: string, etag: string): Promise<void> {
  const pointer = join(snapshotFolder(storage, commit), file)
  const blob = blobPath(storage, etag)
  await mkdir(dirname(pointer), { recursive: true })
  try {
    await lstat(pointer)
    await rm(pointer, { force: true })
  } catch {
    // nothing there yet
  }
  try {
    await symlink(relative(dirname(pointer), blob), pointer)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return
    await copyFile(blob, pointer).catch((copyError: unknown) => {
      throw FileSystemError.wrap(copyError, pointer, 'copy the blob to')
    })
  }
}
