import type { PreTokenizer } from './pre-tokenizer.js'

/** `Sequence`: each pre-tokenizer in turn, on every piece of the one before. */
export function createSequencePreTokenizer(preTokenizers: readonly PreTokenizer[]): PreTokenizer {
  return { steps: preTokenizers.flatMap((preTokenizer) => preTokenizer.steps) }
}
