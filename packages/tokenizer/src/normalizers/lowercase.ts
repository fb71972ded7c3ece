import type { Normalizer } from './normalizer.js'

/**
 * `Lowercase`: each character's lower case. Character by character as in Rust, so a final `Σ` becomes
 * `σ`, where JavaScript's `toLowerCase` (which applies the final-sigma rule) would give `ς`.
 */
export function createLowercase(): Normalizer {
  return {
    normalize(text) {
      if (!text.includes('Σ')) return text.toLowerCase()
      let result = ''
      for (const character of text) result += character.toLowerCase()
      return result
    },
  }
}
