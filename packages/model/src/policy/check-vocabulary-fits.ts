import { InvalidArgumentError } from '@ludic/core'

/**
 * Checks up front that every id the tokenizer can produce is a row of the model's embedding: `tokenizer.vocabSize`
 * (its largest id + 1) must be at most `modelConfig.vocabSize`. A larger model vocabulary is fine (padding rows,
 * as Qwen's 151 936 for 151 669 ids). Without this check the mismatch shows only at the first forward pass
 * that meets a high id. Throws an `InvalidArgumentError` naming both sizes.
 */
export function checkVocabularyFits(tokenizer: { readonly vocabSize: number }, modelConfig: { readonly vocabSize: number }): void {
  if (tokenizer.vocabSize > modelConfig.vocabSize) {
    throw new InvalidArgumentError({
      argument: 'tokenizer',
      value: tokenizer.vocabSize,
      message:
        `tokenizer has ${tokenizer.vocabSize} ids, model has ${modelConfig.vocabSize}: ids ${modelConfig.vocabSize}–${tokenizer.vocabSize - 1} ` +
        'have no embedding; pair the model with its own tokenizer, or create it with vocabSize: tokenizer.vocabSize',
    })
  }
}
