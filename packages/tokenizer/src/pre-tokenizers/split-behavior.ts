import type { PieceSink } from './pre-tokenizer.js'

/** What `Split` does with the matches of its pattern, as Hugging Face's `SplitDelimiterBehavior`. */
export type SplitBehavior = 'Removed' | 'Isolated' | 'MergedWithPrevious' | 'MergedWithNext' | 'Contiguous'

export const splitBehaviors: readonly SplitBehavior[] = ['Removed', 'Isolated', 'MergedWithPrevious', 'MergedWithNext', 'Contiguous']

/**
 * Cuts `text` at the matches of a global RegExp and emits the pieces `behavior` keeps. With `invert`
 * the matches and the text between them swap roles. Empty pieces are never emitted. Re-entrant: `emit`
 * may run the same RegExp (a later step of a Sequence sharing it), so its `lastIndex` is set again after.
 */
export function splitByPattern(text: string, pattern: RegExp, behavior: SplitBehavior, invert: boolean, atStart: boolean, emit: PieceSink): void {
  if (text.length === 0) return
  pattern.lastIndex = 0
  if (behavior === 'Isolated' || behavior === 'Removed') {
    const keepMatches = behavior === 'Isolated' || invert
    const keepGaps = behavior === 'Isolated' || !invert
    let previous = 0
    let match: RegExpExecArray | null
    while ((match = pattern.exec(text)) !== null) {
      const start = match.index
      const matched = match[0]
      // An empty match still cuts the text around it (as in Rust's `find_matches`), and the search goes on past it.
      const resume = matched.length === 0 ? start + (text.codePointAt(start)! > 0xffff ? 2 : 1) : start + matched.length
      if (start > previous && keepGaps) emit(text.slice(previous, start), atStart && previous === 0)
      if (matched.length > 0 && keepMatches) emit(matched, atStart && start === 0)
      previous = matched.length === 0 ? start : resume
      pattern.lastIndex = resume
    }
    if (previous < text.length && keepGaps) emit(previous === 0 ? text : text.slice(previous), atStart && previous === 0)
    return
  }
  // The other behaviors look at neighbors: list the segments first, as Rust's `find_matches` does.
  const starts: number[] = []
  const ends: number[] = []
  const isMatch: boolean[] = []
  const push = (start: number, end: number, matched: boolean) => {
    starts.push(start)
    ends.push(end)
    isMatch.push(matched)
  }
  let previous = 0
  let match: RegExpExecArray | null
  while ((match = pattern.exec(text)) !== null) {
    const start = match.index
    const end = start + match[0].length
    if (end === start) {
      pattern.lastIndex = start + (text.codePointAt(start)! > 0xffff ? 2 : 1)
      // Like Oniguruma's iterator in Rust: no empty match right where the previous match ended.
      if (starts.length > 0 && start === previous) continue
    }
    if (start > previous) push(previous, start, invert)
    push(start, end, !invert)
    previous = end
  }
  if (previous < text.length) push(previous, text.length, invert)
  const outStarts: number[] = []
  const outEnds: number[] = []
  const count = starts.length
  if (behavior === 'MergedWithNext') {
    let previousMatch = false
    for (let index = count - 1; index >= 0; index--) {
      if (isMatch[index]! && !previousMatch && outStarts.length > 0) outStarts[outStarts.length - 1] = starts[index]!
      else {
        outStarts.push(starts[index]!)
        outEnds.push(ends[index]!)
      }
      previousMatch = isMatch[index]!
    }
    outStarts.reverse()
    outEnds.reverse()
  } else {
    let previousMatch = false
    for (let index = 0; index < count; index++) {
      const merge = behavior === 'Contiguous' ? isMatch[index] === previousMatch : isMatch[index]! && !previousMatch
      if (merge && outEnds.length > 0) outEnds[outEnds.length - 1] = ends[index]!
      else {
        outStarts.push(starts[index]!)
        outEnds.push(ends[index]!)
      }
      previousMatch = isMatch[index]!
    }
  }
  for (let index = 0; index < outStarts.length; index++) {
    const start = outStarts[index]!
    const end = outEnds[index]!
    if (end > start) emit(text.slice(start, end), atStart && start === 0)
  }
}
