import { existsSync } from 'node:fs'
import { InvalidArgumentError } from '@ludic/core'

/**
 * Repository ids as the Hub (and Python's `validate_repo_id`) accepts them: `owner/name`, each part letters,
 * digits, `_`, `-` and `.`, starting and ending with a letter, digit or `_`; no `--` or `..` anywhere, no
 * trailing `.git`, 96 characters at most. Ludic requires the owner: a bare `gpt2` is too easily a local folder.
 */
const part = '[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?'
const repoIdPattern = new RegExp(`^${part}/${part}$`)
const maxRepoIdLength = 96
const maxRevisionLength = 256
const maxFilePathLength = 1024
/** The longest file name most file systems take (Linux's NAME_MAX, macOS's, Windows' NTFS), in UTF-8 bytes. */
const maxSegmentBytes = 255

/** A repository id and, when one was given (`owner/name@revision`), its revision: a branch, a tag or a commit. */
export interface RepoReference {
  repoId: string
  revision?: string
}

/** Whether `text` is a repository id the Hub accepts (`owner/name`, no revision). */
export function isValidRepoId(text: string): boolean {
  return text.length <= maxRepoIdLength && repoIdPattern.test(text) && !text.includes('--') && !text.includes('..') && !text.endsWith('.git')
}

/** Whether `revision` can name a branch, tag or commit: no empty, `.` or `..` path segment, no control character or backslash. */
export function isValidRevision(revision: string): boolean {
  return (
    revision.length > 0 &&
    revision.length <= maxRevisionLength &&
    !/[\u0000-\u001f\u007f\\]/.test(revision) &&
    revision.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..')
  )
}

/** `owner/name` or `owner/name@revision` split into its parts; `undefined` when it is neither. */
export function parseRepoReference(text: string): RepoReference | undefined {
  const at = text.indexOf('@')
  const repoId = at === -1 ? text : text.slice(0, at)
  if (!isValidRepoId(repoId)) return undefined
  if (at === -1) return { repoId }
  const revision = text.slice(at + 1)
  return isValidRevision(revision) ? { repoId, revision } : undefined
}

/**
 * Whether `text` names a Hub repository (`owner/name`, optionally `owner/name@revision`) rather than a local
 * path: it has the shape of a repository id and no file or directory of that name exists (relative to the
 * working directory), so a local `models/tiny` folder always wins over a repository of the same name.
 */
export function isRepoId(text: string): boolean {
  return typeof text === 'string' && parseRepoReference(text) !== undefined && !existsSync(text)
}

/**
 * Checks a file path inside a repository (from the caller, a Hub listing or a shard index) before it is joined
 * onto the cache: relative, `/`-separated, no empty, `.` or `..` segment, no backslash or control character,
 * 1024 characters at most, each name at most 255 bytes (longer ones fail with `ENAMETOOLONG` once written). Returns `undefined` when it is fine, else what is wrong.
 */
export function repoFilePathProblem(path: string): string | undefined {
  if (path.length === 0) return 'is empty'
  if (path.length > maxFilePathLength) return `is longer than ${maxFilePathLength} characters`
  if (/[\u0000-\u001f\u007f\\]/.test(path)) return 'holds a backslash or a control character'
  if (path.startsWith('/')) return 'is absolute'
  const segments = path.split('/')
  if (segments.some((segment) => segment === '' || segment === '.' || segment === '..')) return "has an empty, '.' or '..' segment"
  const long = segments.find((segment) => Buffer.byteLength(segment, 'utf8') > maxSegmentBytes)
  if (long !== undefined)
    return `has a name of ${Buffer.byteLength(long, 'utf8')} bytes (${JSON.stringify(long.slice(0, 40))}…), more than the ${maxSegmentBytes} a file name may have`
  return undefined
}

/** `parseRepoReference` for a public argument: an `InvalidArgumentError` naming `argument` when `text` is not a repository id. */
export function parseRepoArgument(text: unknown, argument: string): RepoReference {
  const reference = typeof text === 'string' ? parseRepoReference(text) : undefined
  if (reference === undefined) {
    throw new InvalidArgumentError({
      argument,
      value: text,
      message:
        "is not a Hub repository id: expected 'owner/name' or 'owner/name@revision' (letters, digits, '_', '-', '.'; no '--' or '..'; at most 96 characters)",
    })
  }
  return reference
}
