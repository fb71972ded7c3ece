import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { LudicError } from '@ludic/core'

/**
 * The folder of `@ludic/bench` (the one with its package.json), found from this module's location: the same from
 * the sources (tests) and from the build (`dist/`, where tsup puts every entry and chunk).
 */
export function benchPackageRoot(): string {
  let directory = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const manifest = join(directory, 'package.json')
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === '@ludic/bench') return directory
    const parent = dirname(directory)
    if (parent === directory) throw new LudicError('@ludic/bench: cannot find the package folder (no package.json named @ludic/bench above this module)')
    directory = parent
  }
}

/** The Python peers' folder (`peers/`, shipped with the package). */
export function peersDirectory(): string {
  return join(benchPackageRoot(), 'peers')
}

/**
 * The built entry that measures one backend in its own process (`dist/perf-child.js`). A process holds one
 * TensorFlow.js backend, and a separate process keeps one backend's threads and memory from skewing another's.
 */
export function perfChildPath(): string {
  return builtEntryPath('perf-child')
}

/** A built entry of the package (`dist/<name>.js`); an error saying to build when it is missing. */
export function builtEntryPath(name: string): string {
  const path = join(benchPackageRoot(), 'dist', `${name}.js`)
  if (!existsSync(path)) throw new LudicError(`@ludic/bench is not built (no ${path}): run npm run build in packages/bench`)
  return path
}
