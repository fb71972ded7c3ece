import { surround, type PostProcessor } from './post-processor.js'

/** `BertProcessing` and `RobertaProcessing`: `cls` before the sequence, `sep` after it. */
export function createClsSepProcessing(clsId: number, sepId: number): PostProcessor {
  return { addedTokenCount: 2, process: (ids, addSpecialTokens) => (addSpecialTokens ? surround([clsId], ids, [sepId]) : ids) }
}
