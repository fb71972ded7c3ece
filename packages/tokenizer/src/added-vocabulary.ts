import type { Normalizer } from './normalizers/normalizer.js'

/** A token added on top of the model's vocabulary (special tokens, chat markers…), as in `added_tokens`. */
export interface AddedToken {
  id: number
  content: string
  /** Only matches a whole word: no word character right before or after. */
  singleWord: boolean
  /** Takes the white space on its left with it. */
  leftStrip: boolean
  /** Takes the white space on its right with it. */
  rightStrip: boolean
  /** Matches the normalized text (else the raw text, before normalization). */
  normalized: boolean
  /** Left out of decoded text with `skipSpecialTokens`. */
  special: boolean
}

/** Receives a piece of text between added tokens, or an added token (`tokenId >= 0`). */
export type SegmentSink = (text: string, tokenId: number, atStart: boolean) => void

/**
 * Which matches of special tokens count (non-special added tokens always do):
 * - `'all'`: every match (Hugging Face's default);
 * - `'none'`: none, so special-token text is encoded as the plain text it is (Hugging Face's `split_special_tokens`:
 *   the matches are found with every added token, then those of special tokens are skipped);
 * - a map of escape characters: the text's specials count, and each escape character is put back as the special
 *   token's text (its value), which does not count (how `Tokenizer.encodeChat` keeps message contents plain).
 */
export type SpecialTokenMatching = 'all' | 'none' | ReadonlyMap<string, string>

/** A `[start, end)` range of text, in UTF-16 code units. */
type Range = readonly [number, number]
/** Whether a match of `token` at `[start, end)` counts. */
type MatchFilter = (token: AddedToken, start: number, end: number) => boolean

interface TrieNode {
  children: Map<number, TrieNode>
  /** Index into the token list of the pattern ending here, or -1. */
  tokenIndex: number
}

/** Rust `regex`'s Unicode `\w`, for `single_word`. */
const wordCharacter = /^[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]$/u
/** White_Space (all in the BMP), for `lstrip` and `rstrip`. */
const whiteSpaceCharacter = /^\p{White_Space}$/u

function endsWithWordCharacter(text: string, end: number): boolean {
  if (end === 0) return false
  const code = text.charCodeAt(end - 1)
  const start = code >= 0xdc00 && code <= 0xdfff && end >= 2 ? end - 2 : end - 1
  return wordCharacter.test(text.slice(start, end))
}

function startsWithWordCharacter(text: string, start: number): boolean {
  if (start >= text.length) return false
  return wordCharacter.test(String.fromCodePoint(text.codePointAt(start)!))
}

/**
 * A set of literal patterns matched leftmost-longest and without overlap, as the Aho–Corasick
 * automaton of Hugging Face's `AddedVocabulary`: a trie walked from each position.
 */
class LeftmostLongestMatcher {
  private readonly root: TrieNode = { children: new Map(), tokenIndex: -1 }
  /** Whether a UTF-16 code unit starts some pattern: most positions are skipped on this test alone. */
  private readonly startsPattern = new Uint8Array(0x10000)
  readonly isEmpty: boolean

  constructor(patterns: readonly { pattern: string; tokenIndex: number }[]) {
    for (const { pattern, tokenIndex } of patterns) {
      if (pattern.length === 0) continue
      let node = this.root
      for (let index = 0; index < pattern.length; index++) {
        const code = pattern.charCodeAt(index)
        let child = node.children.get(code)
        if (child === undefined) node.children.set(code, (child = { children: new Map(), tokenIndex: -1 }))
        node = child
      }
      if (node.tokenIndex < 0) node.tokenIndex = tokenIndex
      this.startsPattern[pattern.charCodeAt(0)] = 1
    }
    this.isEmpty = this.root.children.size === 0
  }

  /** Calls `onMatch(start, end, tokenIndex)` for each match, left to right. */
  forEachMatch(text: string, onMatch: (start: number, end: number, tokenIndex: number) => void): void {
    const rootChildren = this.root.children
    const startsPattern = this.startsPattern
    for (let start = 0; start < text.length; ) {
      const code = text.charCodeAt(start)
      if (startsPattern[code] === 0) {
        start++
        continue
      }
      let node = rootChildren.get(code)
      if (node === undefined) {
        start++
        continue
      }
      let bestEnd = -1
      let bestToken = -1
      for (let index = start + 1; ; index++) {
        if (node.tokenIndex >= 0) {
          bestEnd = index
          bestToken = node.tokenIndex
        }
        if (index >= text.length) break
        const next: TrieNode | undefined = node.children.get(text.charCodeAt(index))
        if (next === undefined) break
        node = next
      }
      if (bestEnd < 0) {
        start++
        continue
      }
      onMatch(start, bestEnd, bestToken)
      start = bestEnd
    }
  }
}

/**
 * The added tokens of a tokenizer and how they cut text, as Hugging Face's `AddedVocabulary`:
 * tokens with `normalized: false` are found in the raw text first; the text between them is
 * normalized, then tokens with `normalized: true` are found in it (matching their normalized form).
 */
export class AddedVocabulary {
  readonly tokens: readonly AddedToken[]
  private readonly byContent = new Map<string, AddedToken>()
  private readonly byId = new Map<number, AddedToken>()
  /** What an id decodes to: the content, normalized for `normalized` tokens (as Rust's `tokenizers` 0.23 does). */
  private readonly decodedContents = new Map<number, string>()
  private readonly rawMatcher: LeftmostLongestMatcher
  private readonly normalizedMatcher: LeftmostLongestMatcher

  constructor(tokens: readonly AddedToken[], normalizer: Normalizer | undefined) {
    this.tokens = tokens
    for (const token of tokens) {
      this.byContent.set(token.content, token)
      this.byId.set(token.id, token)
      this.decodedContents.set(token.id, token.normalized && normalizer !== undefined ? normalizer.normalize(token.content) : token.content)
    }
    // Rust lists special tokens first, then the others; patterns are unique by content.
    const ordered = [...tokens.filter((token) => token.special), ...tokens.filter((token) => !token.special)]
    const indexed = ordered.map((token) => ({ token, tokenIndex: tokens.indexOf(token) }))
    this.rawMatcher = new LeftmostLongestMatcher(
      indexed.filter(({ token }) => !token.normalized).map(({ token, tokenIndex }) => ({ pattern: token.content, tokenIndex })),
    )
    this.normalizedMatcher = new LeftmostLongestMatcher(
      indexed
        .filter(({ token }) => token.normalized)
        .map(({ token, tokenIndex }) => ({ pattern: normalizer === undefined ? token.content : normalizer.normalize(token.content), tokenIndex })),
    )
  }

  tokenToId(content: string): number | undefined {
    return this.byContent.get(content)?.id
  }

  idToToken(id: number): string | undefined {
    return this.decodedContents.get(id)
  }

  isSpecialId(id: number): boolean {
    return this.byId.get(id)?.special === true
  }

  /** The contents of the special tokens, longest first (how `Tokenizer.encodeChat` finds them in message contents). */
  get specialContents(): readonly string[] {
    this.specialContentList ??= this.tokens
      .filter((token) => token.special && token.content.length > 0)
      .map((token) => token.content)
      .sort((a, b) => b.length - a.length)
    return this.specialContentList
  }

  private specialContentList: readonly string[] | undefined
  private allContentsMatcher: LeftmostLongestMatcher | undefined

  /**
   * Calls `onMatch(start, end, content)` for each special token's text in `text` (raw contents, matched with every
   * added token leftmost-longest as the raw pass of `split`; the matches of non-special tokens are passed over).
   */
  forEachSpecialMatch(text: string, onMatch: (start: number, end: number, content: string) => void): void {
    this.allContentsMatcher ??= new LeftmostLongestMatcher(this.tokens.map((token, tokenIndex) => ({ pattern: token.content, tokenIndex })))
    this.allContentsMatcher.forEachMatch(text, (start, end, tokenIndex) => {
      const token = this.tokens[tokenIndex]!
      if (token.special) onMatch(start, end, token.content)
    })
  }

  /**
   * Cuts `text` into added tokens and the (normalized) text between them, in order; empty pieces are
   * skipped. `normalizer` applies to each piece between tokens found in the raw text. `specials` says which
   * matches of special tokens count (see `SpecialTokenMatching`; default: all).
   */
  split(text: string, normalizer: Normalizer | undefined, emit: SegmentSink, specials: SpecialTokenMatching = 'all'): void {
    const escapes = typeof specials === 'string' ? undefined : specials
    const escapePattern = escapes === undefined || escapes.size === 0 ? undefined : escapeCharacters(escapes)
    const rawAccepts = specials === 'none' ? acceptsNoSpecial : acceptsAll
    this.splitWith(this.rawMatcher, text, true, rawAccepts, (piece, tokenId, atStart) => {
      if (tokenId >= 0) {
        emit(piece, tokenId, atStart)
        return
      }
      // Escaped special-token text goes back in before normalization, and is kept from matching in the normalized pass.
      const restored = escapePattern === undefined || !escapePattern.test(piece) ? undefined : restoreEscapes(piece, escapePattern, escapes!)
      const raw = restored?.text ?? piece
      const normalized = normalizer === undefined ? raw : normalizer.normalize(raw)
      let accepts: MatchFilter = rawAccepts
      if (restored !== undefined) {
        const ranges = normalizer === undefined ? restored.ranges : restored.ranges.map((range) => normalizedRange(raw, range, normalizer))
        accepts = (token, start, end) => !token.special || !overlapsAny(ranges, start, end)
      }
      this.splitWith(this.normalizedMatcher, normalized, atStart, accepts, emit)
    })
  }

  private splitWith(matcher: LeftmostLongestMatcher, text: string, atStart: boolean, accepts: MatchFilter, emit: SegmentSink): void {
    if (text.length === 0) return
    if (matcher.isEmpty) {
      emit(text, -1, atStart)
      return
    }
    let previousEnd = 0
    matcher.forEachMatch(text, (matchStart, matchEnd, tokenIndex) => {
      const token = this.tokens[tokenIndex]!
      // As Rust's `find_matches`: a match that does not count is passed over (its text stays text), never retried shorter.
      if (!accepts(token, matchStart, matchEnd)) return
      let start = matchStart
      let end = matchEnd
      if (token.singleWord) {
        const startsWord = !endsWithWordCharacter(text, start)
        const endsWord = !startsWithWordCharacter(text, end)
        if (!startsWord || !endsWord) return
      }
      if (token.leftStrip) {
        let spaceStart = start
        while (spaceStart > 0 && whiteSpaceCharacter.test(text[spaceStart - 1]!)) spaceStart--
        start = Math.max(spaceStart, previousEnd)
      }
      if (token.rightStrip) while (end < text.length && whiteSpaceCharacter.test(text[end]!)) end++
      if (previousEnd < start) emit(text.slice(previousEnd, start), -1, atStart && previousEnd === 0)
      emit(text.slice(start, end), token.id, atStart && start === 0)
      previousEnd = end
    })
    if (previousEnd < text.length) emit(previousEnd === 0 ? text : text.slice(previousEnd), -1, atStart && previousEnd === 0)
  }
}

const acceptsAll: MatchFilter = () => true
const acceptsNoSpecial: MatchFilter = (token) => !token.special

/** A pattern matching any of the escape characters (keys of `escapes`; each one code point). */
function escapeCharacters(escapes: ReadonlyMap<string, string>): RegExp {
  const characters = [...escapes.keys()].map((character) => `\\u{${character.codePointAt(0)!.toString(16)}}`).join('')
  return new RegExp(`[${characters}]`, 'u')
}

/** `piece` with each escape character replaced by its text, and where those texts are now. */
function restoreEscapes(piece: string, pattern: RegExp, escapes: ReadonlyMap<string, string>): { text: string; ranges: Range[] } {
  const global = new RegExp(pattern.source, 'gu')
  const ranges: Range[] = []
  let text = ''
  let previousEnd = 0
  for (const match of piece.matchAll(global)) {
    text += piece.slice(previousEnd, match.index)
    const content = escapes.get(match[0])!
    ranges.push([text.length, text.length + content.length])
    text += content
    previousEnd = match.index + match[0].length
  }
  return { text: text + piece.slice(previousEnd), ranges }
}

/**
 * Where a range of `raw` lies after normalization: the normalized lengths of the text before its start and end.
 * Exact for normalizers that act on each character or add a prefix (NFC, lowercase, replace, prepend…); for others
 * (a right strip) it is off by the few characters they change, which the overlap test of a match absorbs.
 */
function normalizedRange(raw: string, [start, end]: Range, normalizer: Normalizer): Range {
  const before = start === 0 ? 0 : normalizer.normalize(raw.slice(0, start)).length
  return [before, Math.max(before + 1, normalizer.normalize(raw.slice(0, end)).length)]
}

function overlapsAny(ranges: readonly Range[], start: number, end: number): boolean {
  for (const [rangeStart, rangeEnd] of ranges) if (start < rangeEnd && rangeStart < end) return true
  return false
}
