import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

/**
 * The installed version of a package, read from its package.json (found above its resolved entry, so packages
 * whose `exports` hide `package.json` are read too); undefined when it is not installed.
 */
export function installedVersion(name: string): string | undefined {
  const entry = resolveEntry(name)
  if (entry === undefined) return undefined
  for (let directory = dirname(entry); ; directory = dirname(directory)) {
    const manifest = join(directory, 'package.json')
    if (existsSync(manifest)) {
      const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string }
      if (parsed.name === name) return parsed.version
    }
    if (dirname(directory) === directory) return undefined
  }
}

/** The file a package's name resolves to, as an ES module import (`import.meta.resolve`) or else by `require`. */
function resolveEntry(name: string): string | undefined {
  try {
    const url = import.meta.resolve?.(name)
    if (url?.startsWith('file:')) return fileURLToPath(url)
  } catch {
    // not resolvable as an import: try require
  }
  try {
    return createRequire(import.meta.url).resolve(name)
  } catch {
    return undefined
  }
}
