import type { Normalizer } from './normalizer.js'

const leadingWhiteSpace = /^\p{White_Space}+/u
const trailingWhiteSpace = /\p{White_Space}+$/u

/** Removes White_Space (Rust's `char::is_whitespace`: U+0085 yes, U+FEFF no) from the start and/or end. */
export function stripWhiteSpace(text: string, left: boolean, right: boolean): string {
  let result = text
  if (left) result = result.replace(leadingWhiteSpace, '')
  if (right) result = result.replace(trailingWhiteSpace, '')
  return result
}

/** `Strip`: removes white space on the left (`strip_left`) and/or right (`strip_right`). */
export function createStrip(options: { left: boolean; right: boolean }): Normalizer {
  return { normalize: (text) => stripWhiteSpace(text, options.left, options.right) }
}
