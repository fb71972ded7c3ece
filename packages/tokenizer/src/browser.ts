// The browser entry (the `browser` export condition): everything but loadTokenizer, which reads files and the
// Hugging Face cache. In a browser, loadTokenizerFromUrl fetches tokenizer.json (bounded), or parse it yourself (a file
// picker) and call Tokenizer.fromJSON.
export {
  Tokenizer,
  type TokenizerChatEncodeOptions,
  type TokenizerChatTemplateOptions,
  type TokenizerDecodeOptions,
  type TokenizerLoadOptions,
} from './tokenizer.js'
export { loadTokenizerFromUrl, loadTokenizerFromUrlOptionsSchema, type LoadTokenizerFromUrlOptions } from './load-tokenizer-from-url.js'
export { MissingChatTemplateError } from './chat-template/missing-chat-template-error.js'
export { tokenizerLimitsSchema, defaultTokenizerLimits, TokenizerLimitError, type TokenizerLimits, type TokenizerLimitsOptions } from './tokenizer-limits.js'
export { createStreamDecoder, type StreamDecoder } from './stream-decoder.js'
export { tokenizerConfigSchema, tokenizerJsonSchema, addedTokenJsonSchema, type TokenizerConfig, type TokenizerJson } from './tokenizer-json.js'
export { translateOnigurumaPattern, compileOnigurumaPattern, UnsupportedPatternError } from './regex/oniguruma-to-javascript.js'
export { MergeOutOfVocabularyError } from './models/bpe.js'
export { PrecompiledCharsmapError } from './normalizers/precompiled.js'
export { byteLevelAlphabet, toByteLevel } from './byte-level/byte-level-alphabet.js'
export { preTokenize, type PreTokenizer, type PreTokenizerStep, type PieceSink } from './pre-tokenizers/pre-tokenizer.js'
export type { Normalizer } from './normalizers/normalizer.js'
export type { TokenizerModel } from './models/tokenizer-model.js'
export type { PostProcessor } from './post-processors/post-processor.js'
export type { Decoder } from './decoders/decoder.js'
export type { AddedToken, SpecialTokenMatching } from './added-vocabulary.js'
export { createNormalizer } from './normalizers/create-normalizer.js'
export { createPreTokenizer } from './pre-tokenizers/create-pre-tokenizer.js'
export { createTokenizerModel } from './models/create-tokenizer-model.js'
export { createPostProcessor } from './post-processors/create-post-processor.js'
export { createDecoder } from './decoders/create-decoder.js'
export { chatTemplateRenderer, hasChatTemplate, renderChatTemplate, type ChatTemplateContext } from './chat-template/render-chat-template.js'
export { trainBpe, trainBpeOptionsSchema, preTokenizerPatterns, type TrainBpeOptions, type TrainedTokenizerJson } from './training/train-bpe.js'
