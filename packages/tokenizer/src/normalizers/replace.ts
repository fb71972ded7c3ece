import type { Normalizer } from './normalizer.js'

/** `Replace`: every match of a literal or an (Oniguruma) pattern becomes `content`, taken literally. */
export function createReplace(pattern: RegExp, content: string): Normalizer {
  return { normalize: (text) => replaceAll(text, pattern, content) }
}

/** Replaces every non-overlapping match of a global RegExp with a literal string (no `$1` substitution). */
export function replaceAll(text: string, pattern: RegExp, content: string): string {
  pattern.lastIndex = 0
  // `$` escaped as `$$`: the replacement is taken literally, on the engine's fast path (no callback).
  return text.replace(pattern, content.includes('$') ? content.replaceAll('$', '$$$$') : content)
}
