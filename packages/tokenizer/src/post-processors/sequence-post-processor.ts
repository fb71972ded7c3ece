import type { PostProcessor } from './post-processor.js'

/** `Sequence`: each post-processor in turn. (`ByteLevel` post-processing only trims offsets: it is the identity on ids.) */
export function createSequencePostProcessor(processors: readonly PostProcessor[]): PostProcessor {
  return {
    addedTokenCount: processors.reduce((total, processor) => total + processor.addedTokenCount, 0),
    process(ids, addSpecialTokens) {
      let result = ids
      for (const processor of processors) result = processor.process(result, addSpecialTokens)
      return result
    },
  }
}
