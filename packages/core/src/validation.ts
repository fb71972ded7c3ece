import type { z } from 'zod'
import { InvalidArgumentError } from './errors.js'

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
