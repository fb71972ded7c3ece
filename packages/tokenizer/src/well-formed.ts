/** Replaces lone surrogates with U+FFFD, as Rust (whose strings cannot hold them) sees JavaScript text. */
export function toWellFormed(text: string): string {
  return (text as string & { toWellFormed(): string }).toWellFormed()
}
