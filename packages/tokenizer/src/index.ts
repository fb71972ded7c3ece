// The Node entry: the browser entry (browser.ts), and loadTokenizer, which reads files and the Hugging Face cache.
export * from './browser.js'
export { loadTokenizer, type LoadTokenizerOptions, type TokenizerFiles } from './load-tokenizer.js'
