/** The fourth stage of the pipeline: adds the special tokens around an encoded sequence (BOS, CLS/SEP…). */
export interface PostProcessor {
  /** The ids with the template's special tokens, when `addSpecialTokens`; else `ids` unchanged. */
  process(ids: Int32Array, addSpecialTokens: boolean): Int32Array
  /** How many ids `process` adds to a single sequence. */
  readonly addedTokenCount: number
}

/** Puts `before` and `after` around `ids`. */
export function surround(before: readonly number[], ids: Int32Array, after: readonly number[]): Int32Array {
  const result = new Int32Array(before.length + ids.length + after.length)
  result.set(before, 0)
  result.set(ids, before.length)
  result.set(after, before.length + ids.length)
  return result
}
