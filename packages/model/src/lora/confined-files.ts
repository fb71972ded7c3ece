import { realpath, stat } from 'node:fs/promises'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import { InvalidArgumentError } from '@ludic/core'
import { openRegularFile, readOpenedFile, readRegularFile } from '@ludic/core/node'

/**
 * A path that cannot be used: outside the allowed directories, missing, or not a regular file. `notFound` marks the
 * answers a server gives as 404 (nothing usable there: missing, a broken or escaping link — one answer for all, so
 * that it tells nothing about what lies outside the allowed directories).
 */
const marker = Symbol.for('ludic.error.ConfinedPathError')

export class ConfinedPathError extends InvalidArgumentError {
  private readonly [marker] = true
  readonly notFound: boolean

  constructor(options: { argument: string; value: string; message: string; notFound: boolean; cause?: unknown }) {
    super(options)
    this.notFound = options.notFound
  }

  static override isInstance(error: unknown): error is ConfinedPathError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true
  }
}

/** Whether `path` (absolute, resolved) is `root` or lies below it. */
function isWithin(root: string, path: string): boolean {
  const rest = relative(root, path)
  return rest === '' || (!rest.startsWith(`..${sep}`) && rest !== '..' && !isAbsolute(rest))
}

/**
 * Directories a client may name files under (`ludic serve --lora-root`): each resolved once, symbolic links followed.
 * `resolveDirectory` and `readFile` check a path lexically first (a path outside every root is refused without
 * touching the disk), then after resolving its links (a link that leads out is refused as if nothing were there), and
 * read only regular files, opened without blocking and checked to be the very file the checked path names.
 */
export interface ConfinedDirectories {
  readonly roots: readonly string[]
  /** The real path of a directory named by a client (relative: to the first root), inside a root. */
  resolveDirectory(path: string, argument: string): Promise<string>
  /** A regular file `name` of a directory `resolveDirectory` gave, read whole within `maxBytes`. */
  readFile(directory: string, name: string, options: { argument: string; maxBytes: number }): Promise<Uint8Array>
}

export async function confineToDirectories(roots: readonly string[]): Promise<ConfinedDirectories> {
  if (roots.length === 0) throw new InvalidArgumentError({ argument: 'roots', value: roots, message: 'needs at least one directory' })
  const realRoots: string[] = []
  for (const root of roots) {
    const real = await realpath(resolve(root)).catch((error: unknown) => {
      throw new InvalidArgumentError({ argument: 'roots', value: root, message: 'is not a directory that can be read', cause: error })
    })
    if (!(await stat(real)).isDirectory()) throw new InvalidArgumentError({ argument: 'roots', value: root, message: 'is not a directory' })
    realRoots.push(real)
  }
  const inside = (path: string) => realRoots.some((root) => isWithin(root, path))
  const nothingThere = (argument: string, path: string, cause?: unknown) =>
    new ConfinedPathError({ argument, value: path, message: 'nothing usable is there within the allowed directories', notFound: true, cause })

  /** The real path of `path`, which must stay inside a root; anything else is the one "nothing there" answer. */
  const resolveInside = async (path: string, argument: string, shown: string): Promise<string> => {
    let real: string
    try {
      real = await realpath(path)
    } catch (error) {
      throw nothingThere(argument, shown, error)
    }
    if (!inside(real)) throw nothingThere(argument, shown)
    return real
  }

  return {
    roots: realRoots,
    async resolveDirectory(path, argument) {
      const candidate = resolve(realRoots[0]!, path)
      if (!inside(candidate) && !roots.some((root) => isWithin(resolve(root), candidate))) {
        throw new ConfinedPathError({
          argument,
          value: path,
          message: 'is not under a directory this server takes adapters from (the operator names them: ludic serve --lora-root)',
          notFound: false,
        })
      }
      const real = await resolveInside(candidate, argument, path)
      if (!(await stat(real)).isDirectory()) throw new ConfinedPathError({ argument, value: path, message: 'is not a directory', notFound: false })
      return real
    },
    async readFile(directory, name, { argument, maxBytes }) {
      const shown = join(directory, name)
      const real = await resolveInside(shown, argument, shown)
      const opened = await openRegularFile(real, { argument, maxBytes, noFollow: true }).catch((error: unknown) => {
        if (InvalidArgumentError.isInstance(error)) throw error
        throw nothingThere(argument, shown, error)
      })
      try {
        // The path may have changed between the check and the open: it must still resolve to itself, to this file.
        const again = await stat(real).catch(() => undefined)
        if (
          (await realpath(real).catch(() => undefined)) !== real ||
          again === undefined ||
          again.dev !== opened.identity.dev ||
          again.ino !== opened.identity.ino
        ) {
          throw nothingThere(argument, shown)
        }
        return await readOpenedFile(opened, shown, { argument, maxBytes })
      } finally {
        await opened.handle.close()
      }
    },
  }
}

/** Reads a regular file within `maxBytes` with no directory rule (a path the program's own user gave). */
export function readLocalFile(directory: string, name: string, options: { argument: string; maxBytes: number }): Promise<Uint8Array> {
  return readRegularFile(join(directory, name), options)
}
