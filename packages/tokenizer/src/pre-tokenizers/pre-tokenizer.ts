/**
 * Receives the pieces a pre-tokenizer cuts. `atStart` tells whether the piece begins at the start of
 * the input (Metaspace's `prepend_scheme: "first"` only prepends there).
 */
export type PieceSink = (piece: string, atStart: boolean) => void

/**
 * One step of a pre-tokenizer: `split` cuts a piece into smaller pieces (never empty ones); `map`
 * rewrites each piece without cutting it (ByteLevel's byte-to-character mapping). Keeping the two
 * apart lets the tokenizer cache the model's output by the piece *before* the trailing maps.
 */
export type PreTokenizerStep =
  | { readonly kind: 'split'; split(text: string, atStart: boolean, emit: PieceSink): void }
  | { readonly kind: 'map'; map(piece: string): string }

/** The second stage of the pipeline: cuts normalized text into pieces that the model encodes one by one. */
export interface PreTokenizer {
  readonly steps: readonly PreTokenizerStep[]
}

/** Runs every step of a pre-tokenizer over `text`; returns the pieces (tests and tools, not the hot path). */
export function preTokenize(preTokenizer: PreTokenizer, text: string, atStart = true): string[] {
  let pieces: { text: string; atStart: boolean }[] = text.length === 0 ? [] : [{ text, atStart }]
  for (const step of preTokenizer.steps) {
    const next: { text: string; atStart: boolean }[] = []
    for (const piece of pieces) {
      if (step.kind === 'map') next.push({ text: step.map(piece.text), atStart: piece.atStart })
      else step.split(piece.text, piece.atStart, (part, partAtStart) => next.push({ text: part, atStart: partAtStart }))
    }
    pieces = next
  }
  return pieces.map((piece) => piece.text)
}
