import type { z } from 'zod'
import { formatPath, InvalidArgumentError, ParseError } from './errors.js'

/**
 * Parses `value` with a zod schema at a package boundary. On failure throws an `InvalidArgumentError`
 * naming the argument (and the field inside it) and the offending value.
 */
export function parseArgument<Schema extends z.ZodType>(schema: Schema, value: unknown, argument: string): z.output<Schema> {
  const result = schema.safeParse(value, { error: unknownKeyMessage })
  if (result.success) return result.data
  const issue = result.error.issues[0]
  const path = issue?.path ?? []
  let offending: unknown = value
  for (const key of path) {
    if (offending === null || typeof offending !== 'object') break
    offending = (offending as Record<PropertyKey, unknown>)[key as PropertyKey]
  }
  const field = path.length === 0 ? argument : `${argument}.${path.map(String).join('.')}`
  throw new InvalidArgumentError({ argument: field, value: offending, message: issue?.message ?? 'invalid value', cause: result.error })
}

/**
 * The message of an unknown key of a strict object, with the closest known key when one is near (a misspelling):
 * `Unrecognized key: "episodsPerStep" (did you mean "episodesPerStep"?)`. Other issues keep zod's message.
 */
function unknownKeyMessage(issue: { code?: string; keys?: readonly string[]; inst?: unknown }): string | undefined {
  if (issue.code !== 'unrecognized_keys' || issue.keys === undefined) return undefined
  const shape = (issue.inst as { _zod?: { def?: { shape?: Record<string, unknown> } } } | undefined)?._zod?.def?.shape ?? {}
  const known = Object.keys(shape).filter((key) => !issue.keys!.includes(key))
  const named = issue.keys.map((key) => {
    const near = closestName(key, known)
    return near === undefined ? JSON.stringify(key) : `${JSON.stringify(key)} (did you mean ${JSON.stringify(near)}?)`
  })
  return `Unrecognized key${issue.keys.length === 1 ? '' : 's'}: ${named.join(', ')}`
}

/**
 * The name among `candidates` nearest to `name` when it looks like a misspelling of it: at most a third of its
 * letters apart (optimal string alignment distance: an insertion, a deletion, a substitution or two neighbours swapped
 * each count one; case ignored), the nearest first, ties to the first given. `undefined` when none is that near.
 */
export function closestName(name: string, candidates: readonly string[]): string | undefined {
  const limit = Math.max(1, Math.floor(name.length / 3))
  let best: { candidate: string; distance: number } | undefined
  for (const candidate of candidates) {
    if (Math.abs(candidate.length - name.length) > limit) continue
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase())
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { candidate, distance }
  }
  return best?.candidate
}

/** Optimal string alignment distance (Levenshtein with adjacent transpositions). */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, row) =>
    Array.from({ length: b.length + 1 }, (_, column) => (row === 0 ? column : column === 0 ? row : 0)),
  )
  for (let row = 1; row <= a.length; row++) {
    for (let column = 1; column <= b.length; column++) {
      const cost = a[row - 1] === b[column - 1] ? 0 : 1
      let distance = Math.min(rows[row - 1]![column]! + 1, rows[row]![column - 1]! + 1, rows[row - 1]![column - 1]! + cost)
      if (row > 1 && column > 1 && a[row - 1] === b[column - 2] && a[row - 2] === b[column - 1]) distance = Math.min(distance, rows[row - 2]![column - 2]! + 1)
      rows[row]![column] = distance
    }
  }
  return rows[a.length]![b.length]!
}

/** How many failing fields a `ParseError` from `parseInput` lists after the first. */
const maxListedIssues = 8

/**
 * Parses input read from outside (a file, JSON, a server's answer, a user callback's result) with a zod
 * schema. On failure throws a `ParseError` with `source`, the path of the first failing field (after
 * `path`, the location of `value` inside the source) and a message that names every failing field, e.g.
 * `Cannot parse config.json at hidden_size: expected number; also at num_attention_heads: too small`.
 */
export function parseInput<Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
  location: { source: string; path?: readonly (string | number)[] },
): z.output<Schema> {
  const result = schema.safeParse(value, { error: unknownKeyMessage })
  if (result.success) return result.data
  const prefix = location.path ?? []
  const issues = result.error.issues.map((issue) => ({
    path: [...prefix, ...issue.path.map((part) => (typeof part === 'symbol' ? String(part) : part))],
    message: issue.message,
  }))
  const [first, ...rest] = issues
  const others = rest.slice(0, maxListedIssues).map((issue) => `at ${formatPath(issue.path)}: ${issue.message}`)
  if (rest.length > maxListedIssues) others.push(`${rest.length - maxListedIssues} more`)
  throw new ParseError({
    source: location.source,
    path: first?.path ?? prefix,
    message: `${first?.message ?? 'invalid value'}${others.length === 0 ? '' : `; also ${others.join('; ')}`}`,
    cause: result.error,
  })
}
