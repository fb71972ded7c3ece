/**
 * The guard against catastrophic backtracking, for every regular expression Ludic compiles from outside text (a
 * tokenizer's `Split` pattern, a LoRA adapter's `target_modules`): JavaScript cannot interrupt a running `RegExp`
 * and has no linear-time engine without a V8 flag, so a pattern is judged before it runs.
 *
 * Two rules:
 *
 * 1. **Exponential** (always): a quantifier that repeats (its maximum is above 1: `*`, `+`, `{2,}`, `{3}`…) may not
 *    apply to a part that can itself match in more than one way, that is one holding a quantifier of variable count
 *    (`a+`, `a?`, `a{1,3}`) or an alternation, unless that part is atomic (a lookaround). `(a+)+$`, `(a|a)*`,
 *    `(\w+\s?)*` and `(a?){20}` are refused. Then every repeated part matches in one way at most from a given
 *    position, and the backtracking of a failed match is polynomial in the text.
 * 2. **Polynomial** (when the text's length is known, as for module names): the degree of that polynomial is the
 *    number of variable quantifiers in a row, so `.*.*.*.*.*.*.*.*.*.*X` passes rule 1 yet backtracks for seconds on a
 *    32-character name. With the text's length `n`, the ways a match can be tried are bounded: `k` unbounded
 *    quantifiers in a row (and the start position) share the `n` characters in at most `C(n + k, k)` ways, an
 *    alternation adds its branches' ways, a bounded quantifier multiplies them by its choices; over `maxPaths` the
 *    pattern is refused. The default, 10^8, is about a second of V8's backtracking at worst (ten `.*` in a row
 *    reach 5·10^10 on 32 characters; LLaMA-Factory's `^(?!.*visual).*(?:q_proj|…).*` 6·10^6 on 64).
 *
 * The tokenizer applies rule 1 while it translates Oniguruma patterns (`repetitionIsCatastrophic` and
 * `catastrophicRepetitionMessage` are that rule, shared); `findRegExpBacktrackingHazard` applies both to JavaScript
 * source. Compile the pattern first (`new RegExp`), so that a syntax error is reported as one.
 */

/** The default `maxPaths` of `findRegExpBacktrackingHazard`: ways a match may be tried, a loose bound on steps. */
export const defaultMaxRegExpPaths = 1e8

/** Rule 1: whether repeating a part up to `maximum` times can backtrack exponentially. */
export function repetitionIsCatastrophic(partIsAmbiguous: boolean, maximum: number): boolean {
  return partIsAmbiguous && maximum > 1
}

/** Rule 1's refusal, for a quantifier (`+`, `{2,}`) found at `where` (`'at offset 4'`). */
export function catastrophicRepetitionMessage(quantifier: string, where: string): string {
  return (
    `the quantifier ${quantifier} ${where} repeats a part that can itself match in more than one way ` +
    '(a nested quantifier or an alternation, as in (a+)+ or (a|b)*), which can backtrack exponentially; make that part atomic, (?>…), or its quantifier possessive, a++'
  )
}

export interface RegExpBacktrackingOptions {
  /** The pattern's flags (`u` or `v` change how escapes read). Default: none. */
  flags?: string
  /** The longest text the pattern will run on; with it, rule 2 applies. Default: unknown (rule 1 only). */
  textLength?: number
  /** Rule 2's budget: the most ways a match may be tried on a text of `textLength`. Default: `defaultMaxRegExpPaths`. */
  maxPaths?: number
}

/**
 * What the guard tracks about a part of a pattern. The ways it can be tried on a text of `n` characters are at most
 * `constant · C(n + quantifiers, quantifiers)`: its `quantifiers` unbounded ones share the same `n` characters.
 */
interface Shape {
  /** Whether the part can match in more than one way from one position. */
  ambiguous: boolean
  /** The product of the alternations' branch counts and the bounded quantifiers' choices. */
  constant: number
  /** How many quantifiers in a row may take any count up to the text's length. */
  quantifiers: number
}

interface Frame {
  /** The alternatives closed so far. */
  alternatives: Shape[]
  sequence: Shape[]
  /** Whether the last item of `sequence` may take a quantifier. */
  lastIsAtom: boolean
  lookaround: boolean
}

/**
 * Applies both rules to a JavaScript pattern's source (see the module's comment). Returns why it is refused, naming
 * the quantifier and its offset, or undefined when it is safe. Never throws, whatever the source.
 */
export function findRegExpBacktrackingHazard(source: string, options: RegExpBacktrackingOptions = {}): string | undefined {
  const unicode = /[uv]/.test(options.flags ?? '')
  const textLength = options.textLength
  const n = textLength === undefined ? 0 : Math.max(0, textLength)
  const stack: Frame[] = [{ alternatives: [], sequence: [], lastIsAtom: false, lookaround: false }]
  const top = (): Frame => stack[stack.length - 1]!
  const push = (shape: Shape, isAtom: boolean): void => {
    const frame = top()
    frame.sequence.push(shape)
    frame.lastIsAtom = isAtom
  }
  const close = (frame: Frame): Shape => {
    const alternatives = [...frame.alternatives, sequenceShape(frame.sequence)]
    const constant = alternatives.reduce((sum, shape) => sum + shape.constant, 0)
    const quantifiers = Math.max(...alternatives.map((shape) => shape.quantifiers))
    const ambiguous = alternatives.length > 1 || alternatives[0]!.ambiguous
    return { ambiguous: ambiguous && !frame.lookaround, constant, quantifiers }
  }
  let position = 0
  while (position < source.length) {
    const character = source[position]!
    const start = position
    position++
    switch (character) {
      case '\\':
        position = skipEscape(source, position, unicode)
        push({ ambiguous: false, constant: 1, quantifiers: 0 }, !/^[bB]$/.test(source[start + 1] ?? ''))
        break
      case '[':
        position = skipClass(source, position)
        push({ ambiguous: false, constant: 1, quantifiers: 0 }, true)
        break
      case '(': {
        // The group's prefix (`?:`, `?=`, `?<=`, `?<name>`, `?i:`) quantifies nothing: skip it.
        let lookaround = false
        if (source[position] === '?') {
          const next = source[position + 1]
          const after = source[position + 2]
          if (next === '=' || next === '!') {
            lookaround = true
            position += 2
          } else if (next === '<' && (after === '=' || after === '!')) {
            lookaround = true
            position += 3
          } else {
            const end = source.indexOf(next === '<' ? '>' : ':', position)
            position = end < 0 ? position + 1 : end + 1
          }
        }
        stack.push({ alternatives: [], sequence: [], lastIsAtom: false, lookaround })
        break
      }
      case ')': {
        if (stack.length === 1) return undefined // a syntax error, the compiler's to report
        const frame = stack.pop()!
        push(close(frame), !frame.lookaround || !unicode)
        break
      }
      case '|': {
        const frame = top()
        frame.alternatives.push(sequenceShape(frame.sequence))
        frame.sequence = []
        frame.lastIsAtom = false
        break
      }
      case '^':
      case '$':
        push({ ambiguous: false, constant: 1, quantifiers: 0 }, false)
        break
      case '*':
      case '+':
      case '?':
      case '{': {
        const quantifier = character === '{' ? readInterval(source, start) : { text: character, ...symbolBounds(character) }
        if (quantifier === undefined) {
          push({ ambiguous: false, constant: 1, quantifiers: 0 }, true) // a literal brace (outside the u flag)
          break
        }
        position = start + quantifier.text.length
        if (source[position] === '?') position++ // lazy: the same choices, in another order
        const frame = top()
        if (!frame.lastIsAtom) break // a syntax error, the compiler's to report
        const part = frame.sequence.pop()!
        if (repetitionIsCatastrophic(part.ambiguous, quantifier.maximum)) return catastrophicRepetitionMessage(quantifier.text, `at offset ${start}`)
        const choices = quantifier.maximum - quantifier.minimum + 1
        const bounded = choices <= n ? { constant: part.constant * choices, quantifiers: part.quantifiers } : undefined
        // A repeated part with more than one way holds a lookaround (it is not ambiguous): tried once per repetition.
        const repeated = quantifier.maximum > 1 && (part.constant > 1 || part.quantifiers > 0)
        const shape = bounded !== undefined && !repeated ? bounded : { constant: part.constant, quantifiers: part.quantifiers + (repeated ? 2 : 1) }
        push({ ambiguous: part.ambiguous || quantifier.minimum !== quantifier.maximum, ...shape }, false)
        break
      }
      default:
        push({ ambiguous: false, constant: 1, quantifiers: 0 }, true)
    }
  }
  if (textLength === undefined) return undefined
  while (stack.length > 1) stack.pop() // unbalanced: a syntax error, the compiler's to report
  const whole = close(top())
  const paths = whole.constant * combinations(n + whole.quantifiers + 1, whole.quantifiers + 1) // + 1: the start position
  const maxPaths = options.maxPaths ?? defaultMaxRegExpPaths
  if (!(paths <= maxPaths)) {
    return (
      `its variable quantifiers in a row can backtrack polynomially: up to ${paths.toExponential(1)} ways to try a match on a text of ` +
      `${textLength} characters, over the limit of ${maxPaths.toExponential(1)} (use fewer .* and alternations in a row)`
    )
  }
  return undefined
}

function sequenceShape(sequence: readonly Shape[]): Shape {
  return {
    ambiguous: sequence.some((shape) => shape.ambiguous),
    constant: sequence.reduce((constant, shape) => constant * shape.constant, 1),
    quantifiers: sequence.reduce((quantifiers, shape) => quantifiers + shape.quantifiers, 0),
  }
}

/** C(total, chosen), in floating point (Infinity when huge). */
function combinations(total: number, chosen: number): number {
  let value = 1
  for (let index = 1; index <= chosen && Number.isFinite(value); index++) value = (value * (total - chosen + index)) / index
  return value
}

function symbolBounds(quantifier: '*' | '+' | '?'): { minimum: number; maximum: number } {
  if (quantifier === '*') return { minimum: 0, maximum: Number.POSITIVE_INFINITY }
  if (quantifier === '+') return { minimum: 1, maximum: Number.POSITIVE_INFINITY }
  return { minimum: 0, maximum: 1 }
}

/** `{n}`, `{n,}`, `{n,m}` at `start`, or undefined when the brace is a literal. */
function readInterval(source: string, start: number): { text: string; minimum: number; maximum: number } | undefined {
  const match = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(start, start + 40))
  if (match === null) return undefined
  const minimum = Number(match[1])
  const maximum = match[2] === undefined ? minimum : match[3] === '' ? Number.POSITIVE_INFINITY : Number(match[3])
  return { text: match[0], minimum, maximum }
}

/** The position after the escape whose backslash ends at `position`. */
function skipEscape(source: string, position: number, unicode: boolean): number {
  const letter = source[position]
  if (letter === undefined) return position
  const braced = (opening: string, closing: string): number => {
    if (source[position + 1] !== opening) return position + 1
    const end = source.indexOf(closing, position + 2)
    return end < 0 ? position + 1 : end + 1
  }
  if (letter === 'k') return braced('<', '>')
  if (unicode && (letter === 'p' || letter === 'P' || letter === 'u')) return braced('{', '}')
  if (letter === 'u') return position + 5
  if (letter === 'x') return position + 3
  if (letter === 'c') return position + 2
  if (/[1-9]/.test(letter)) {
    let end = position + 1
    while (/\d/.test(source[end] ?? '')) end++
    return end
  }
  return position + 1
}

/** The position after the character class whose `[` ends at `position`. */
function skipClass(source: string, position: number): number {
  let depth = 1
  while (position < source.length && depth > 0) {
    const character = source[position]!
    if (character === '\\') position += 2
    else {
      if (character === ']') depth--
      position++
    }
  }
  return position
}
