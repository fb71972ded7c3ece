import { InvalidArgumentError, type ChatMessage } from '@ludic/core'
import type { AddedVocabulary } from '../added-vocabulary.js'

/** Unicode's private-use code points: the BMP's area, then planes 15 and 16. */
const privateUseRanges: readonly (readonly [number, number])[] = [
  [0xe000, 0xf8ff],
  [0xf0000, 0xffffd],
  [0x100000, 0x10fffd],
]
const privateUseCharacter = /[\u{e000}-\u{f8ff}\u{f0000}-\u{ffffd}\u{100000}-\u{10fffd}]/gu
/** Nesting of a message's fields (tool calls and their arguments) that is walked; deeper is refused. */
const maxDepth = 64

/** Messages whose special-token text is replaced by escape characters, and what each escape stands for. */
export interface EscapedMessages {
  messages: ChatMessage[]
  /** Escape character → the special token's text. */
  escapes: Map<string, string>
}

/**
 * Replaces each special token's text in the messages' strings (contents, names, tool calls…; not object keys) by
 * one private-use character per special token, chosen to occur nowhere in the messages, in `avoid` (the template,
 * tools, variables) or in any added token. The template cannot tell an escape from other text, and a template that
 * cuts, splits or strips a content keeps each escape whole (one character, not white space, caseless); an escape is
 * put back as the special token's text as it was (a template that changes the case of a content leaves it as it was).
 * Returns undefined when no message holds special-token text (nothing to escape).
 */
export function escapeSpecialTokens(messages: readonly ChatMessage[], vocabulary: AddedVocabulary, avoid: readonly unknown[]): EscapedMessages | undefined {
  const found = new Set<string>()
  forEachString(messages, 'messages', (text) => vocabulary.forEachSpecialMatch(text, (_start, _end, content) => found.add(content)))
  if (found.size === 0) return undefined

  const used = new Set<number>()
  const collect = (text: string) => {
    for (const match of text.matchAll(privateUseCharacter)) used.add(match[0].codePointAt(0)!)
  }
  forEachString(messages, 'messages', collect)
  forEachString(avoid, undefined, collect) // (deeper than maxDepth: not looked at)
  for (const token of vocabulary.tokens) collect(token.content)
  const escapeOf = new Map<string, string>()
  const escapes = new Map<string, string>()
  const candidates = privateUseCodePoints()
  for (const content of found) {
    let next = candidates.next()
    while (!next.done && used.has(next.value)) next = candidates.next()
    if (next.done)
      throw new InvalidArgumentError({
        argument: 'messages',
        value: found.size,
        message: 'hold more kinds of special tokens than there are free private-use characters to escape them',
      })
    const character = String.fromCodePoint(next.value)
    escapeOf.set(content, character)
    escapes.set(character, content)
  }

  const escapeText = (text: string): string => {
    let result = ''
    let previousEnd = 0
    vocabulary.forEachSpecialMatch(text, (start, end, content) => {
      result += text.slice(previousEnd, start) + escapeOf.get(content)!
      previousEnd = end
    })
    return previousEnd === 0 ? text : result + text.slice(previousEnd)
  }
  return { messages: mapStrings(messages, escapeText, 'messages', 0) as ChatMessage[], escapes }
}

function* privateUseCodePoints(): Generator<number> {
  for (const [first, last] of privateUseRanges) for (let codePoint = first; codePoint <= last; codePoint++) yield codePoint
}

/** Visits the strings in `value`; deeper than `maxDepth`, refuses it naming `argument` (or, without one, stops). */
function forEachString(value: unknown, argument: string | undefined, visit: (text: string) => void, depth = 0): void {
  if (typeof value === 'string') visit(value)
  else if (typeof value === 'object' && value !== null) {
    if (depth >= maxDepth) {
      if (argument === undefined) return
      throw tooDeep(argument)
    }
    for (const item of Array.isArray(value) ? value : Object.values(value)) forEachString(item, argument, visit, depth + 1)
  }
}

function mapStrings(value: unknown, map: (text: string) => string, argument: string, depth: number): unknown {
  if (typeof value === 'string') return map(value)
  if (typeof value !== 'object' || value === null) return value
  if (depth >= maxDepth) throw tooDeep(argument)
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, map, argument, depth + 1))
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, mapStrings(item, map, argument, depth + 1)]))
}

function tooDeep(argument: string): InvalidArgumentError {
  return new InvalidArgumentError({ argument, value: `${maxDepth} levels`, message: `nest deeper than ${maxDepth} levels` })
}
