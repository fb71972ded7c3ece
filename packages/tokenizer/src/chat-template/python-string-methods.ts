/** Python's `str.isspace()` characters: what `str.strip()` removes when given no argument. */
const pythonWhiteSpace = new Set(
  Array.from('\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000'),
)

export type StripSide = 'both' | 'left' | 'right'

/**
 * Python's `str.strip(chars)`, `lstrip(chars)`, `rstrip(chars)`: removes any of `chars` (or white
 * space when `chars` is None) from the ends. `@huggingface/jinja` ignores the argument and uses
 * JavaScript's `trim`, whose white space differs (U+FEFF in, U+0085 and U+001C–U+001F out).
 */
export function pythonStrip(value: unknown, side: StripSide, characters?: unknown): string {
  if (typeof value !== 'string') throw new TypeError(`strip: expected a string, got ${value === null ? 'none' : typeof value}`)
  if (characters !== undefined && characters !== null && typeof characters !== 'string') {
    throw new TypeError('strip arg must be None or str')
  }
  const set = typeof characters === 'string' ? new Set(Array.from(characters)) : pythonWhiteSpace
  const codePoints = Array.from(value)
  let start = 0
  let end = codePoints.length
  if (side !== 'right') while (start < end && set.has(codePoints[start]!)) start++
  if (side !== 'left') while (end > start && set.has(codePoints[end - 1]!)) end--
  return start === 0 && end === codePoints.length ? value : codePoints.slice(start, end).join('')
}
