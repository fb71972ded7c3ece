import { ParseError } from '@ludic/core'
import { z } from 'zod'
import type { JsonLocation } from '../json-location.js'
import { compileNow, compileOnigurumaPattern, escapeRegExp, UnsupportedPatternError } from './oniguruma-to-javascript.js'

/** `{ "String": "…" }` (a literal) or `{ "Regex": "…" }` (an Oniguruma pattern), as in `Split` and `Replace`. */
export const stringOrRegexPatternSchema = z.union([z.object({ String: z.string() }), z.object({ Regex: z.string() })])
export type StringOrRegexPattern = z.infer<typeof stringOrRegexPatternSchema>

/**
 * Compiles a `String`/`Regex` pattern to a global JavaScript RegExp; a pattern we cannot translate, or that
 * is too large to compile, is a ParseError (now, not in the first `encode`).
 */
export function compileStringOrRegexPattern(pattern: StringOrRegexPattern, location: JsonLocation): RegExp {
  const isString = 'String' in pattern
  try {
    return isString ? compileNow(new RegExp(escapeRegExp(pattern.String), 'gu')) : compileOnigurumaPattern(pattern.Regex)
  } catch (error) {
    if (UnsupportedPatternError.isInstance(error) || error instanceof SyntaxError) {
      throw new ParseError({
        source: location.source,
        path: [...location.path, isString ? 'String' : 'Regex'],
        // V8's message holds the whole pattern: keep its start and its end (the reason).
        message: `cannot ${isString ? 'compile' : 'translate'} the pattern: ${error.message.length > 400 ? `${error.message.slice(0, 200)}…${error.message.slice(-150)}` : error.message}`,
        cause: error,
      })
    }
    throw error
  }
}
