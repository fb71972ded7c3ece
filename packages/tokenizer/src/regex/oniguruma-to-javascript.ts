/**
 * Translates a regular expression written for Oniguruma (the engine Hugging Face's `tokenizers` uses
 * for `Split` patterns, `Replace` normalizers and decoders) into a JavaScript `RegExp` with the same
 * matches. JavaScript differs in ways that change token ids:
 *
 * - `\s` is White_Space in Oniguruma (it takes U+0085, not U+FEFF); JavaScript's takes U+FEFF, not U+0085.
 * - `\d` is any decimal digit (`\p{Nd}`), `\w` is `[\p{L}\p{M}\p{N}\p{Pc}]`, `\h` is a hexadecimal digit.
 * - `(?i:…)` scoped modifiers do not exist in Node 20: letters in them become case-folded classes.
 * - `.` excludes only `\n`; `^` and `$` are line anchors (Ruby syntax); `\A`, `\z`, `\Z` anchor the text.
 * - Possessive quantifiers (`*+`, `++`, `?+`) and atomic groups (`(?>…)`) are emulated with a lookahead
 *   and a back-reference to a named group. `X{n,m}+` is a stacked quantifier in Ruby syntax, as there.
 * - `\p{Han}` (a script without `Script=`), `\p{^L}`, `\x{…}` are rewritten to JavaScript's forms.
 *
 * Unsupported constructs (back-references, `\G`, `\K`, `\X`, `\R`, nested classes and `&&`, extended
 * mode) throw an `UnsupportedPatternError` naming the construct.
 *
 * Catastrophic backtracking is refused too, statically, when the pattern loads (the rule is `@ludic/core`'s
 * `repetitionIsCatastrophic`, shared with every pattern Ludic reads from outside): a quantifier that repeats
 * (its maximum is above 1: `*`, `+`, `{2,}`, `{3}`…) may not apply to a part that can itself match in
 * more than one way, that is one holding a quantifier of variable count (`a+`, `a?`, `a{1,3}`) or an
 * alternation, unless that part is atomic (`(?>…)`, a possessive `a++`) or a lookaround. `(a+)+$`,
 * `(a|a)*`, `(\w+\s?)*` and `(a?){20}` are refused; every real tokenizer's pattern passes (GPT-2, Llama 3,
 * Qwen 2/3, GPT-4o: their quantifiers apply to single characters or classes). Then every repeated part
 * matches in one way at most from a given position, so the backtracking of a failed match is polynomial
 * in the text, of degree at most the number of quantifiers in a row (as with Oniguruma itself), never
 * exponential. Why not bound the input of each regex call instead: a `Split` match may rightly be as long
 * as the text (`\s+` over a run of spaces), so cutting the text changes the ids, and a bound small enough
 * to tame `(a+)+$` (a few dozen characters) would cut real words. JavaScript cannot interrupt a running
 * `RegExp` either, and has no linear-time engine without a V8 flag.
 */

import { catastrophicRepetitionMessage, LudicError, repetitionIsCatastrophic } from '@ludic/core'

const unsupportedPatternMarker = Symbol.for('ludic.error.UnsupportedPatternError')

/**
 * An Oniguruma pattern uses a construct that has no JavaScript translation; the message names it. Where the
 * pattern comes from a file, the caller turns it into a `ParseError` at the pattern's field.
 */
export class UnsupportedPatternError extends LudicError {
  private readonly [unsupportedPatternMarker] = true
  override readonly name = 'UnsupportedPatternError'

  static override isInstance(error: unknown): error is UnsupportedPatternError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[unsupportedPatternMarker] === true
  }
}

const whiteSpace = '\\p{White_Space}'
const notWhiteSpace = '\\P{White_Space}'
const wordClassBody = '\\p{L}\\p{M}\\p{N}\\p{Pc}'
const word = `[${wordClassBody}]`
const notWord = `[^${wordClassBody}]`
const hexDigitBody = '0-9a-fA-F'

/** JavaScript's syntax characters, escaped with a backslash outside classes. */
const syntaxCharacters = new Set(['^', '$', '\\', '.', '*', '+', '?', '(', ')', '[', ']', '{', '}', '|', '/'])

const posixClasses: Record<string, string> = {
  alpha: '\\p{Alphabetic}',
  digit: '\\p{Nd}',
  alnum: '\\p{Alphabetic}\\p{Nd}',
  space: '\\p{White_Space}',
  upper: '\\p{Uppercase}',
  lower: '\\p{Lowercase}',
  xdigit: hexDigitBody,
  word: wordClassBody,
  cntrl: '\\p{Cc}',
  blank: '\\p{Zs}\\t',
  // Oniguruma's Unicode [:punct:] takes symbols too ($, +, =, ▁, emoji…).
  punct: '\\p{P}\\p{S}',
}

const propertyCache = new Map<string, string>()

/** Maps an Oniguruma property name to one JavaScript accepts inside `\p{…}`. */
function javascriptPropertyName(name: string): string {
  const cached = propertyCache.get(name)
  if (cached !== undefined) return cached
  const compact = name.replace(/[\s-]/g, '_')
  const candidates = [compact, `Script=${compact}`]
  const capitalized = compact
    .split('_')
    .map((part) => (part.length === 0 ? part : part[0]!.toUpperCase() + part.slice(1).toLowerCase()))
    .join('_')
  candidates.push(capitalized, `Script=${capitalized}`)
  for (const candidate of candidates) {
    try {
      new RegExp(`\\p{${candidate}}`, 'u')
      propertyCache.set(name, candidate)
      return candidate
    } catch {
      // try the next spelling
    }
  }
  throw new UnsupportedPatternError(`unsupported Unicode property \\p{${name}}`)
}

let caseVariants: Map<number, number[]> | undefined

/** ASCII letters whose simple case folding reaches outside ASCII: K (Kelvin sign) and ſ (long s). */
const asciiFoldExtras: Record<string, number> = { k: 0x212a, s: 0x17f }

/** All code points that match `codePoint` under simple case folding (as Oniguruma's and JavaScript's `/iu`). */
function caseFoldVariants(codePoint: number): number[] {
  if (codePoint < 0x80) {
    const character = String.fromCharCode(codePoint)
    const lower = character.toLowerCase()
    if (lower === character.toUpperCase()) return [codePoint]
    const variants = [lower.charCodeAt(0), character.toUpperCase().charCodeAt(0)]
    const extra = asciiFoldExtras[lower]
    if (extra !== undefined) variants.push(extra)
    return variants
  }
  if (caseVariants === undefined) {
    // Group code points by the single-code-point lower case of their upper case: built once, lazily.
    const groups = new Map<number, Set<number>>()
    const keyOf = (character: string): number | undefined => {
      const upper = character.toUpperCase()
      const lower = (upper.length === character.length ? upper : character).toLowerCase()
      const key = lower.codePointAt(0)
      return key !== undefined && String.fromCodePoint(key) === lower ? key : undefined
    }
    for (let code = 0; code < 0x20000; code++) {
      if (code >= 0xd800 && code <= 0xdfff) continue
      const character = String.fromCodePoint(code)
      if (character.toUpperCase() === character && character.toLowerCase() === character) continue
      const key = keyOf(character)
      if (key === undefined) continue
      let group = groups.get(key)
      if (group === undefined) groups.set(key, (group = new Set([key])))
      group.add(code)
    }
    caseVariants = new Map()
    for (const group of groups.values()) {
      const members = [...group].sort((a, b) => a - b)
      for (const member of members) caseVariants.set(member, members)
    }
  }
  const variants = caseVariants.get(codePoint) ?? [codePoint]
  // Keep only what JavaScript's own /iu folding agrees with (it is the same simple case folding).
  const probe = new RegExp(`^${escapeForClass(codePoint)}$`, 'iu')
  return variants.filter((variant) => variant === codePoint || probe.test(String.fromCodePoint(variant)))
}

function escapeForClass(codePoint: number): string {
  const character = String.fromCodePoint(codePoint)
  if (/[0-9A-Za-z]/.test(character)) return character
  return `\\u{${codePoint.toString(16)}}`
}

function escapeLiteral(codePoint: number): string {
  const character = String.fromCodePoint(codePoint)
  if (syntaxCharacters.has(character)) return `\\${character}`
  if (codePoint < 0x20 || codePoint === 0x7f) return `\\u{${codePoint.toString(16)}}`
  return character
}

interface Flags {
  ignoreCase: boolean
  dotAll: boolean
}

interface Frame {
  /** Output pieces; `'|'` separates alternatives, anything else is one quantifiable atom. */
  parts: string[]
  /** For each part, whether it can match in more than one way (see `translateOnigurumaPattern`). */
  ambiguous: boolean[]
  /** Whether the last part can take a quantifier. */
  lastIsAtom: boolean
  flags: Flags
  open: string
  atomic: boolean
}

/** Parses an Oniguruma pattern and returns JavaScript source for a `u`-flag RegExp. */
export function translateOnigurumaPattern(pattern: string): string {
  const codePoints = Array.from(pattern, (character) => character.codePointAt(0)!)
  let position = 0
  let namedGroupCounter = 0
  const stack: Frame[] = [{ parts: [], ambiguous: [], lastIsAtom: false, flags: { ignoreCase: false, dotAll: false }, open: '', atomic: false }]
  const top = (): Frame => stack[stack.length - 1]!

  const peek = (offset = 0): string | undefined => {
    const code = codePoints[position + offset]
    return code === undefined ? undefined : String.fromCodePoint(code)
  }
  const pushAtom = (atom: string, ambiguous = false): void => {
    const frame = top()
    frame.parts.push(atom)
    frame.ambiguous.push(ambiguous)
    frame.lastIsAtom = true
  }
  /** An assertion (lookaround, anchor) is atomic in JavaScript: it never matches in more than one way. */
  const pushAssertion = (assertion: string): void => {
    const frame = top()
    frame.parts.push(assertion)
    frame.ambiguous.push(false)
    frame.lastIsAtom = false
  }
  const atomicWrap = (inner: string): string => {
    const name = `atomic${namedGroupCounter++}`
    return `(?:(?=(?<${name}>${inner}))\\k<${name}>)`
  }
  /** Whether `literal` gives an alternation (ß under `(?i)`, which matches one or two characters). */
  const literalIsAmbiguous = (codePoint: number, flags: Flags): boolean => flags.ignoreCase && (codePoint === 0xdf || codePoint === 0x1e9e)
  const literal = (codePoint: number, flags: Flags): string => {
    // ß and ẞ fold to "ss" (Oniguruma's multi-character folding); the one such fold handled.
    if (flags.ignoreCase && (codePoint === 0xdf || codePoint === 0x1e9e)) return '(?:[\\u{df}\\u{1e9e}]|[sS\\u{17f}]{2})'
    if (flags.ignoreCase) {
      const variants = caseFoldVariants(codePoint)
      if (variants.length > 1) return `[${variants.map(escapeForClass).join('')}]`
    }
    return escapeLiteral(codePoint)
  }

  /** Reads `\x{…}`, `\xHH`, `\uHHHH`, octal and control escapes; returns a code point or undefined. */
  const readCodePointEscape = (letter: string): number | undefined => {
    switch (letter) {
      case 'n':
        return 0x0a
      case 't':
        return 0x09
      case 'r':
        return 0x0d
      case 'f':
        return 0x0c
      case 'v':
        return 0x0b
      case 'a':
        return 0x07
      case 'e':
        return 0x1b
      case 'x': {
        if (peek() === '{') {
          const end = codePoints.indexOf(0x7d, position)
          if (end < 0) throw new UnsupportedPatternError('unterminated \\x{…}')
          const hex = String.fromCodePoint(...codePoints.slice(position + 1, end))
          position = end + 1
          return Number.parseInt(hex, 16)
        }
        let hex = ''
        while (hex.length < 2 && /[0-9a-fA-F]/.test(peek() ?? '')) {
          hex += peek()!
          position++
        }
        return hex.length === 0 ? 0 : Number.parseInt(hex, 16)
      }
      case 'u': {
        let hex = ''
        while (hex.length < 4 && /[0-9a-fA-F]/.test(peek() ?? '')) {
          hex += peek()!
          position++
        }
        if (hex.length < 4) throw new UnsupportedPatternError('\\u needs four hexadecimal digits')
        return Number.parseInt(hex, 16)
      }
      case '0': {
        let octal = ''
        while (octal.length < 2 && /[0-7]/.test(peek() ?? '')) {
          octal += peek()!
          position++
        }
        return octal.length === 0 ? 0 : Number.parseInt(octal, 8)
      }
      default:
        return undefined
    }
  }

  const readPropertyEscape = (negated: boolean): string => {
    if (peek() !== '{') throw new UnsupportedPatternError('\\p needs a {name}')
    const end = codePoints.indexOf(0x7d, position)
    if (end < 0) throw new UnsupportedPatternError('unterminated \\p{…}')
    let name = String.fromCodePoint(...codePoints.slice(position + 1, end))
    position = end + 1
    if (name.startsWith('^')) {
      negated = !negated
      name = name.slice(1)
    }
    return `\\${negated ? 'P' : 'p'}{${javascriptPropertyName(name)}}`
  }

  const readClass = (flags: Flags): string => {
    // position is just after '['
    let negated = false
    if (peek() === '^') {
      negated = true
      position++
    }
    const items: string[] = []
    let first = true
    const readClassCodePoint = (): number | string => {
      const character = peek()
      if (character === undefined) throw new UnsupportedPatternError('unterminated character class')
      position++
      if (character === '\\') {
        const letter = peek()
        if (letter === undefined) throw new UnsupportedPatternError('pattern ends with a backslash')
        position++
        switch (letter) {
          case 's':
            return whiteSpace
          case 'S':
            return notWhiteSpace
          case 'd':
            return '\\p{Nd}'
          case 'D':
            return '\\P{Nd}'
          case 'w':
            return wordClassBody
          case 'h':
            return hexDigitBody
          case 'p':
            return readPropertyEscape(false)
          case 'P':
            return readPropertyEscape(true)
          case 'W':
          case 'H':
            throw new UnsupportedPatternError(`\\${letter} inside a character class`)
          case 'b':
            return 0x08
          default: {
            const code = readCodePointEscape(letter)
            if (code !== undefined) return code
            if (/[A-Za-z0-9]/.test(letter)) throw new UnsupportedPatternError(`unsupported escape \\${letter} in a class`)
            return letter.codePointAt(0)!
          }
        }
      }
      if (character === '[') {
        if (peek() === ':') {
          let close = position + 1
          while (close + 1 < codePoints.length && !(codePoints[close] === 0x3a && codePoints[close + 1] === 0x5d)) close++
          if (close + 1 >= codePoints.length) throw new UnsupportedPatternError('unterminated POSIX bracket')
          let name = String.fromCodePoint(...codePoints.slice(position + 1, close))
          position = close + 2
          const negatedPosix = name.startsWith('^')
          if (negatedPosix) name = name.slice(1)
          const body = posixClasses[name]
          if (body === undefined || negatedPosix) throw new UnsupportedPatternError(`unsupported POSIX bracket [:${negatedPosix ? '^' : ''}${name}:]`)
          return body
        }
        throw new UnsupportedPatternError('nested character classes')
      }
      if (character === '&' && peek() === '&') throw new UnsupportedPatternError('character class intersection (&&)')
      return character.codePointAt(0)!
    }
    for (;;) {
      const character = peek()
      if (character === undefined) throw new UnsupportedPatternError('unterminated character class')
      if (character === ']' && !first) {
        position++
        break
      }
      first = false
      const start = readClassCodePoint()
      if (typeof start === 'number' && peek() === '-' && peek(1) !== ']' && peek(1) !== undefined) {
        position++
        const end = readClassCodePoint()
        if (typeof end !== 'number') throw new UnsupportedPatternError('a range ends with a class')
        if (end < start) throw new UnsupportedPatternError('a range is out of order')
        items.push(`${escapeForClass(start)}-${escapeForClass(end)}`)
        if (flags.ignoreCase) {
          if (end - start > 4096) throw new UnsupportedPatternError('a large range under (?i)')
          for (let code = start; code <= end; code++) {
            for (const variant of caseFoldVariants(code)) if (variant < start || variant > end) items.push(escapeForClass(variant))
          }
        }
      } else if (typeof start === 'number') {
        if (flags.ignoreCase) items.push(...caseFoldVariants(start).map(escapeForClass))
        else items.push(escapeForClass(start))
      } else {
        items.push(start)
      }
    }
    return `[${negated ? '^' : ''}${items.join('')}]`
  }

  /** Reads `{n}`, `{n,}`, `{n,m}`, `{,m}` whose `{` was just read; undefined when it is a literal brace. */
  const readInterval = (): string | undefined => {
    const rest = String.fromCodePoint(...codePoints.slice(position - 1, position + 24))
    const match = /^\{(\d*)(,(\d*))?\}/.exec(rest)
    if (match === null || (match[1] === '' && (match[3] ?? '') === '')) return undefined
    position += match[0].length - 1
    const minimum = match[1] === '' ? '0' : match[1]!
    if (match[2] === undefined) return `{${minimum}}`
    return `{${minimum},${match[3] ?? ''}}`
  }

  /** Applies a quantifier (which starts at `offset` in the pattern) to the last atom. */
  const applyQuantifier = (quantifier: string, offset: number): void => {
    const frame = top()
    if (!frame.lastIsAtom) throw new UnsupportedPatternError(`quantifier ${quantifier} follows nothing`)
    const atom = frame.parts.pop()!
    const atomIsAmbiguous = frame.ambiguous.pop()!
    const [minimum, maximum] = quantifierBounds(quantifier)
    if (repetitionIsCatastrophic(atomIsAmbiguous, maximum)) throw new UnsupportedPatternError(catastrophicRepetitionMessage(quantifier, `at offset ${offset}`))
    let suffix = ''
    const isInterval = quantifier.startsWith('{')
    if (peek() === '?') {
      suffix = '?'
      position++
    } else if (peek() === '+' && !isInterval) {
      position++
      pushAtom(atomicWrap(`(?:${atom})${quantifier}`))
      return
    }
    pushAtom(`(?:${atom})${quantifier}${suffix}`, atomIsAmbiguous || minimum !== maximum)
  }

  while (position < codePoints.length) {
    const character = peek()!
    const frame = top()
    position++
    switch (character) {
      case '\\': {
        const letter = peek()
        if (letter === undefined) throw new UnsupportedPatternError('pattern ends with a backslash')
        position++
        switch (letter) {
          case 's':
            pushAtom(whiteSpace)
            break
          case 'S':
            pushAtom(notWhiteSpace)
            break
          case 'd':
            pushAtom('\\p{Nd}')
            break
          case 'D':
            pushAtom('\\P{Nd}')
            break
          case 'w':
            pushAtom(word)
            break
          case 'W':
            pushAtom(notWord)
            break
          case 'h':
            pushAtom(`[${hexDigitBody}]`)
            break
          case 'H':
            pushAtom(`[^${hexDigitBody}]`)
            break
          case 'p':
            pushAtom(readPropertyEscape(false))
            break
          case 'P':
            pushAtom(readPropertyEscape(true))
            break
          case 'b':
            pushAssertion(`(?:(?<=${word})(?!${word})|(?<!${word})(?=${word}))`)
            break
          case 'B':
            pushAssertion(`(?:(?<=${word})(?=${word})|(?<!${word})(?!${word}))`)
            break
          case 'A':
            pushAssertion('^')
            break
          case 'z':
            pushAssertion('$')
            break
          case 'Z':
            pushAssertion('(?=\\n?$)')
            break
          default: {
            const code = readCodePointEscape(letter)
            if (code !== undefined) {
              pushAtom(literal(code, frame.flags), literalIsAmbiguous(code, frame.flags))
              break
            }
            if (/[A-Za-z0-9]/.test(letter)) throw new UnsupportedPatternError(`unsupported escape \\${letter}`)
            pushAtom(literal(letter.codePointAt(0)!, frame.flags), literalIsAmbiguous(letter.codePointAt(0)!, frame.flags))
          }
        }
        break
      }
      case '[':
        pushAtom(readClass(frame.flags))
        break
      case '.':
        pushAtom(frame.flags.dotAll ? '[^]' : '[^\\n]')
        break
      case '^':
        pushAssertion('(?<![^\\n])')
        break
      case '$':
        pushAssertion('(?![^\\n])')
        break
      case '|':
        frame.parts.push('|')
        frame.ambiguous.push(true)
        frame.lastIsAtom = false
        break
      case '*':
      case '+':
      case '?':
        applyQuantifier(character, position - 1)
        break
      case '{': {
        const offset = position - 1
        const interval = readInterval()
        if (interval === undefined) pushAtom(literal(0x7b, frame.flags))
        else applyQuantifier(interval, offset)
        break
      }
      case '(': {
        let open = '(?:'
        let atomic = false
        const flags = { ...frame.flags }
        if (peek() === '?') {
          const next = peek(1)
          if (next === ':') {
            position += 2
          } else if (next === '=' || next === '!') {
            open = `(?${next}`
            position += 2
          } else if (next === '<' && (peek(2) === '=' || peek(2) === '!')) {
            open = `(?<${peek(2)}`
            position += 3
          } else if (next === '>') {
            atomic = true
            position += 2
          } else if (next === '#') {
            const end = codePoints.indexOf(0x29, position)
            if (end < 0) throw new UnsupportedPatternError('unterminated comment')
            position = end + 1
            break
          } else if (next === '<' || next === "'" || next === 'P') {
            // Named group: keep it as a plain group (names are not used).
            const close = next === "'" ? "'" : '>'
            const end = codePoints.indexOf(close.codePointAt(0)!, position + 2)
            if (end < 0) throw new UnsupportedPatternError('unterminated group name')
            position = end + 1
          } else {
            // Inline options: (?imx-imx) or (?imx-imx:subexpression)
            position++
            let enable = true
            for (;;) {
              const option = peek()
              position++
              if (option === 'i') flags.ignoreCase = enable
              else if (option === 'm') flags.dotAll = enable
              else if (option === '-') enable = false
              else if (option === ':') break
              else if (option === ')') {
                // Applies to the rest of the enclosing group.
                frame.flags = flags
                open = ''
                break
              } else throw new UnsupportedPatternError(`unsupported group option (?${option ?? ''}`)
            }
            if (open === '') break
          }
        }
        stack.push({ parts: [], ambiguous: [], lastIsAtom: false, flags, open, atomic })
        break
      }
      case ')': {
        if (stack.length === 1) throw new UnsupportedPatternError('unbalanced parenthesis')
        stack.pop()
        const body = frame.parts.join('')
        if (frame.atomic) pushAtom(atomicWrap(body))
        else if (frame.open === '(?:') pushAtom(`(?:${body})`, frame.ambiguous.includes(true))
        else pushAssertion(`${frame.open}${body})`)
        break
      }
      default:
        pushAtom(literal(character.codePointAt(0)!, frame.flags), literalIsAmbiguous(character.codePointAt(0)!, frame.flags))
    }
  }
  if (stack.length !== 1) throw new UnsupportedPatternError('unbalanced parenthesis')
  return top().parts.join('')
}

/** The least and most repetitions of a quantifier (`*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}`, as `readInterval` writes them). */
function quantifierBounds(quantifier: string): [number, number] {
  if (quantifier === '*') return [0, Number.POSITIVE_INFINITY]
  if (quantifier === '+') return [1, Number.POSITIVE_INFINITY]
  if (quantifier === '?') return [0, 1]
  const [minimum = '0', maximum] = quantifier.slice(1, -1).split(',')
  return [Number(minimum), maximum === undefined ? Number(minimum) : maximum === '' ? Number.POSITIVE_INFINITY : Number(maximum)]
}

const compiledCache = new Map<string, RegExp>()

/**
 * Compiles an Oniguruma pattern to a global, unicode JavaScript RegExp (cached; reset `lastIndex` before use).
 * The RegExp is run once here: V8 compiles it on first use, and a pattern too large to compile (a literal
 * of 10^5 characters) throws its SyntaxError now rather than in the first `encode`.
 */
export function compileOnigurumaPattern(pattern: string): RegExp {
  let regex = compiledCache.get(pattern)
  if (regex === undefined) {
    regex = compileNow(new RegExp(translateOnigurumaPattern(pattern), 'gu'))
    compiledCache.set(pattern, regex)
  }
  return new RegExp(regex.source, regex.flags)
}

/** Runs a RegExp once, so that V8 compiles it (and throws a SyntaxError if it cannot); returns it, `lastIndex` reset. */
export function compileNow(regex: RegExp): RegExp {
  regex.exec('')
  regex.lastIndex = 0
  return regex
}

/** Escapes a string so that it matches itself literally in a JavaScript RegExp. */
export function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&')
}
