import { surround, type PostProcessor } from './post-processor.js'

/** One item of a single-sequence template: the sequence itself, or a special token's ids. */
export type TemplateItem = { kind: 'sequence' } | { kind: 'special'; ids: readonly number[] }

/** `TemplateProcessing`: the `single` template, e.g. `<s> $A` (Llama 2) or `[CLS] $A [SEP]`. */
export function createTemplateProcessing(single: readonly TemplateItem[]): PostProcessor {
  const sequenceIndex = single.findIndex((item) => item.kind === 'sequence')
  const idsOf = (items: readonly TemplateItem[]): number[] => items.flatMap((item) => (item.kind === 'special' ? item.ids : []))
  const before = idsOf(sequenceIndex < 0 ? single : single.slice(0, sequenceIndex))
  const after = sequenceIndex < 0 ? [] : idsOf(single.slice(sequenceIndex + 1))
  return {
    addedTokenCount: before.length + after.length,
    process: (ids, addSpecialTokens) => (addSpecialTokens ? surround(before, sequenceIndex < 0 ? new Int32Array(0) : ids, after) : ids),
  }
}
