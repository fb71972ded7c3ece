import { createHash } from 'node:crypto'
import { type Dirent, constants } from 'node:fs'
import { access, readdir, realpath, stat } from 'node:fs/promises'
import { basename, join, resolve } from 'node:path'
import { CliError, exitCodes } from '../errors.js'
import { isInside } from './file-inside.js'

/** The file `ludic train` writes into a run directory at its start: the config it ran, overrides applied (JSON). */
export const runConfigFileName = 'run-config.json'

/** A directory `ludic view` was given: a run directory, or one holding run directories (`runs/`). */
export interface RunSource {
  /** As given on the command line. */
  argument: string
  /** Its real path (symbolic links resolved). */
  path: string
}

/** A run directory the viewer shows. */
export interface RunDirectory {
  /** Short, stable (the same path gives the same id on every start) and URL-safe: `<name>-<8 hex digits>`. */
  id: string
  /** The directory's name (`<parent>/<name>` when two runs share a name). */
  name: string
  /** Its real path. */
  path: string
}

/**
 * The directories given to `ludic view`, checked: each must exist and be a directory (else a `CliError` naming the
 * argument, exit code 3). Relative paths are taken from `cwd`; the same directory given twice is kept once.
 */
export async function resolveRunSources(runArguments: readonly string[], cwd: string): Promise<RunSource[]> {
  const sources: RunSource[] = []
  for (const argument of runArguments) {
    const absolute = resolve(cwd, argument)
    let path: string
    try {
      path = await realpath(absolute)
    } catch {
      throw new CliError(`run directory '${argument}' not found (${absolute}): give a run directory, or the directory holding your runs`, exitCodes.notFound)
    }
    const isDirectory = await stat(path).then(
      (stats) => stats.isDirectory(),
      () => false,
    )
    if (!isDirectory)
      throw new CliError(`run directory '${argument}' (${absolute}) is not a directory: give the run directory that holds it`, exitCodes.notFound)
    if (!sources.some((source) => source.path === path)) sources.push({ argument, path })
  }
  return sources
}

const exists = (path: string) =>
  access(path, constants.F_OK).then(
    () => true,
    () => false,
  )

/**
 * Whether `path` holds a run: `metrics.jsonl`, `trajectories.jsonl`, `run-config.json`, `report.json` (an example's or
 * CharacterArena's results) or a `checkpoint-<step>/` directory.
 */
export async function isRunDirectory(path: string, entries?: readonly Dirent[]): Promise<boolean> {
  for (const name of ['metrics.jsonl', 'trajectories.jsonl', runConfigFileName, 'report.json']) if (await exists(join(path, name))) return true
  const listed = entries ?? (await readdir(path, { withFileTypes: true }).catch(() => [] as Dirent[]))
  return listed.some((entry) => entry.isDirectory() && /^checkpoint-\d+$/.test(entry.name))
}

/** The id of the run at `path` (a real path): its name made URL-safe and cut to 40 characters, then 8 hex digits of the path's SHA-256. */
export function runId(path: string): string {
  const slug =
    basename(path)
      .toLowerCase()
      .replace(/[^a-z0-9_-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40) || 'run'
  return `${slug}-${createHash('sha256').update(path).digest('hex').slice(0, 8)}`
}

/**
 * The runs under `sources` now: a source that is a run itself, else each of its children that is one (a child that is
 * a symbolic link counts only when it resolves inside the source). Sorted by path; at most `maxRuns`.
 */
export async function discoverRuns(sources: readonly RunSource[], maxRuns = 1000): Promise<RunDirectory[]> {
  const paths = new Set<string>()
  for (const source of sources) {
    const entries = await readdir(source.path, { withFileTypes: true }).catch(() => undefined)
    if (entries === undefined) continue // removed since: no runs there now
    if (await isRunDirectory(source.path, entries)) {
      paths.add(source.path)
      continue
    }
    for (const entry of entries) {
      if (!entry.isDirectory() && !entry.isSymbolicLink()) continue
      const child = await realpath(join(source.path, entry.name)).catch(() => undefined)
      if (child === undefined || !isInside(source.path, child) || child === source.path) continue
      const isDirectory = await stat(child).then(
        (stats) => stats.isDirectory(),
        () => false,
      )
      if (isDirectory && (await isRunDirectory(child))) paths.add(child)
    }
  }
  const sorted = [...paths].sort().slice(0, maxRuns)
  const names = sorted.map((path) => basename(path))
  return sorted.map((path, index) => ({
    id: runId(path),
    name: names.indexOf(names[index]!) === names.lastIndexOf(names[index]!) ? names[index]! : `${basename(join(path, '..'))}/${names[index]}`,
    path,
  }))
}
