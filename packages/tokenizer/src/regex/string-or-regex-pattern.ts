import { ParseError } from '@ludic/core'
import { z } from 'zod'
import type { JsonLocation } from '../json-location.js'
import { compileOnigurumaPattern, escapeRegExp, UnsupportedPatternError } from './oniguruma-to-javascript.js'

/** `{ "String": "…" }` (a literal) or `{ "Regex": "…" }` (an Oniguruma pattern), as in `Split` and `Replace`. */
export const stringOrRegexPatternSchema = z.union([z.object({ String: z.string() }), z.object({ Regex: z.string() })])
export type StringOrRegexPattern = z.infer<typeof stringOrRegexPatternSchema>

/** Compiles a `String`/`Regex` pattern to a global JavaScript RegExp; a pattern we cannot translate is a ParseError. */
export function compileStringOrRegexPattern(pattern: StringOrRegexPattern, location: JsonLocation): RegExp {
  if ('String' in pattern) return new RegExp(escapeRegExp(pattern.String), 'gu')
  try {
    return compileOnigurumaPattern(pattern.Regex)
  } catch (error) {
    if (UnsupportedPatternError.isInstance(error) || error instanceof SyntaxError) {
      throw new ParseError({
        source: location.source,
        path: [...location.path, 'Regex'],
        message: `cannot translate the pattern: ${error.message}`,
        cause: error,
      })
    }
    throw error
  }
}
