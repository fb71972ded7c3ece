/**
 * Action extraction, shared by every game (games.md, "Common protocol"): the move is the content of the
 * last complete `\boxed{...}` when there is one (if that content holds brackets, the last `[...]` inside
 * it), else the content of the last `[...]` of the response. Moves are compared to legal actions
 * case-insensitively, ignoring surrounding whitespace, runs of whitespace and spaces around `:` and `,`.
 */

const boxedOpening = '\\boxed{'
const formattingWrapper = /^\\(?:text|textbf|textrm|texttt|mathrm|mathbf)\s*\{([\s\S]*)\}$/
const bracketed = /\[([^[\]]*)\]/g

/** Content of the last complete, non-empty `\boxed{...}` (braces balanced), or undefined. Linear time. */
function lastBoxedContent(text: string): string | undefined {
  // One pass pairs every '{' with its '}', so unclosed boxes cost nothing extra.
  const closing = new Map<number, number>()
  const open: number[] = []
  for (let index = 0; index < text.length; index++) {
    const character = text.charCodeAt(index)
    if (character === 123 /* { */) open.push(index)
    else if (character === 125 /* } */ && open.length > 0) closing.set(open.pop()!, index)
  }
  for (let start = text.lastIndexOf(boxedOpening); start >= 0; start = start === 0 ? -1 : text.lastIndexOf(boxedOpening, start - 1)) {
    const brace = start + boxedOpening.length - 1
    const end = closing.get(brace)
    if (end === undefined) continue
    let content = text.slice(brace + 1, end).trim()
    // Unwrap `\text{...}` and the like, a few layers deep at most.
    for (let layer = 0, match = formattingWrapper.exec(content); layer < 3 && match !== null; layer++, match = formattingWrapper.exec(content)) {
      content = match[1]!.trim()
    }
    if (content !== '') return content
  }
  return undefined
}

/** Content of the last `[...]` (without nested brackets) in `text`, or undefined. */
function lastBracketedContent(text: string): string | undefined {
  let last: string | undefined
  for (const match of text.matchAll(bracketed)) last = match[1]
  return last
}

/**
 * The move a response makes, without its brackets: `'bet'` for `'I bet. [bet]'` or `'\\boxed{[bet]}'`
 * or `'\\boxed{bet}'`. Undefined when the response holds no move. An empty `\boxed{}` counts as absent.
 */
export function extractMove(text: string): string | undefined {
  const boxed = lastBoxedContent(text)
  if (boxed !== undefined) return lastBracketedContent(boxed) ?? boxed
  return lastBracketedContent(text)
}

/** The spelling moves are compared in: lower case, trimmed, single spaces, no space around `:` or `,`. */
export function normalizeMove(move: string): string {
  const inner = /^\s*\[([\s\S]*)\]\s*$/.exec(move)?.[1] ?? move
  return inner
    .trim()
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .replace(/\s*([:,])\s*/g, '$1')
}

/**
 * The legal action (as listed, e.g. `'[bet]'`) that a response plays, or undefined when it plays none.
 */
export function matchLegalAction(text: string, legalActions: readonly string[]): string | undefined {
  const move = extractMove(text)
  if (move === undefined) return undefined
  const normalized = normalizeMove(move)
  return legalActions.find((action) => normalizeMove(action) === normalized)
}

/** `text`, cut to `maxLength` characters with an ellipsis, for messages that quote a player's input. */
export function abbreviate(text: string, maxLength = 40): string {
  return text.length > maxLength ? `${text.slice(0, maxLength - 1)}…` : text
}
