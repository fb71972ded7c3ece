import type { z } from 'zod'
import { formatPath, InvalidArgumentError, ParseError } from './errors.js'

/**
 * Parses `value` with a zod schema at a package boundary. On failure throws an `InvalidArgumentError`
 * naming the argument (and the field inside it) and the offending value.
 */
export function parseArgument<Schema extends z.ZodType>(schema: Schema, value: unknown, argument: string): z.output<Schema> {
  const result = schema.safeParse(value)
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
  const result = schema.safeParse(value)
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
